-- Samples of the validation runs in the criteria window: one row per (run, host, benchmark, metric, rank).
-- A run and its time: the benchmark_runs() macro (sql/schema/warehouse.sql). The window is the $window_days before
-- the latest run, that run included.
-- A metric with per-step values (sample_idx set) gives each sample as the quantiles $grid of its steps
-- (width = their number); any other gives its value (the mean, should a key repeat within a run).
-- nccl-tests message sizes become part of the metric (busbw_oop@8589934592); no rank reads -1.
-- A result naming several hosts (nccl-tests across nodes) cannot blame one node: it is left out.
WITH files AS (
    SELECT * FROM benchmark_run_files()
), runs AS (
    SELECT * FROM benchmark_runs()
), window_runs AS (
    SELECT * FROM runs WHERE run_time >= (SELECT max(run_time) FROM runs) - to_days($window_days)
), r AS (
    SELECT w.run_id, w.run_time, b.host, b.benchmark,
           CASE WHEN b.size_bytes IS NULL THEN b.metric ELSE b.metric || '@' || b.size_bytes END AS metric,
           coalesce(b.rank, -1)::INTEGER AS rank, b.sample_idx, b.value
    FROM benchmark_results b JOIN files f USING (file) JOIN window_runs w USING (run_id)
    WHERE NOT contains(b.host, ',')
), stepped AS (
    SELECT DISTINCT benchmark, metric FROM r WHERE sample_idx IS NOT NULL
)
-- single values: their mean, should a key repeat within a run (a streaming aggregate: it spills)
SELECT r.run_id, min(r.run_time) AS run_time, r.host, r.benchmark, r.metric, r.rank, 1 AS width,
       avg(r.value) AS value, NULL::DOUBLE[] AS q
FROM r ANTI JOIN stepped s USING (benchmark, metric)
GROUP BY r.run_id, r.host, r.benchmark, r.metric, r.rank
UNION ALL
SELECT r.run_id, min(r.run_time), r.host, r.benchmark, r.metric, r.rank, len($grid)::INTEGER,
       avg(r.value), quantile_cont(r.value, $grid)
FROM r SEMI JOIN stepped s USING (benchmark, metric)
GROUP BY r.run_id, r.host, r.benchmark, r.metric, r.rank
