-- Per job-size bucket (GPUs rounded up to a multiple of 8, then to a power of
-- two): job instances, runtime, and infrastructure failures (a primary cause
-- outside the user domain).
WITH sized AS (
    SELECT j.*, (2 ^ ceil(log2(greatest(8, 8 * ceil(j.n_gpus / 8.0)))))::BIGINT AS bucket_gpus
    FROM jobs j WHERE j.start_time IS NOT NULL AND j.end_time IS NOT NULL AND j.n_gpus > 0
)
SELECT s.bucket_gpus, count(*) AS instances, sum(s.elapsed_s) / 3600.0 AS runtime_hours,
       count(a.job_id) AS failures
FROM sized s LEFT JOIN failure_attribution a
  ON a.job_id = s.job_id AND a.instance = s.instance AND a.is_primary AND a.domain <> 'user'
GROUP BY s.bucket_gpus ORDER BY s.bucket_gpus
