-- Benchmark results of the validation runs in the criteria window.
-- A run is the folder a results file sits in under benchmarks/ (SuperBench
-- writes one results-summary.jsonl per run; the simulator one folder per
-- weekly run), or the file itself when it sits directly in benchmarks/. Its
-- time is the earliest timestamp its results carry, else the file's mtime.
-- The window is the $window_days before the latest run, that run included.
WITH files AS (
    SELECT path AS file,
           CASE WHEN regexp_extract(path, '([^/]+)/[^/]+$', 1) = 'benchmarks' THEN regexp_extract(path, '([^/]+)$', 1)
                ELSE regexp_extract(path, '([^/]+)/[^/]+$', 1) END AS run_id,
           make_timestamp(mtime_ns // 1000) AS file_time
    FROM ingested_files WHERE source = 'benchmarks'
), runs AS (
    SELECT f.run_id, coalesce(min(b.run_time), min(f.file_time)) AS run_time
    FROM files f JOIN benchmark_results b USING (file) GROUP BY f.run_id
), window_runs AS (
    SELECT * FROM runs WHERE run_time >= (SELECT max(run_time) FROM runs) - to_days($window_days)
)
SELECT w.run_id, w.run_time, b.host, b.benchmark, b.metric, b.rank, b.size_bytes, b.sample_idx, b.value
FROM benchmark_results b JOIN files f USING (file) JOIN window_runs w USING (run_id)
