-- iteration_degradation (Aegis P_deg): for every series of per-step times
-- (benchmark per-step samples; telemetry metrics named like iteration/step
-- time), the share of time spent above 1.2 x the mean step time.
CREATE OR REPLACE TABLE iteration_degradation AS
WITH series AS (
    SELECT 'benchmark' AS origin, file, host, benchmark || '/' || metric AS series, value
    FROM benchmark_results WHERE sample_idx IS NOT NULL AND metric ILIKE '%time%'
    UNION ALL
    SELECT 'telemetry', file, host, metric, value FROM telemetry
    WHERE regexp_matches(metric, '(?i)(iter(ation)?|step)_?time')
), with_mean AS (
    SELECT *, avg(value) OVER (PARTITION BY origin, file, host, series) AS mean_t FROM series
)
-- rounded to 12 significant digits: a float sum depends on the order rows arrive in, the answer must not
SELECT origin, file, host, series, count(*) AS samples, round(avg(value), 9) AS mean_step,
       round(sum(greatest(value - $slack * mean_t, 0)) / nullif(sum(value), 0), 12) AS p_deg
FROM with_mean GROUP BY ALL ORDER BY p_deg DESC NULLS LAST;
