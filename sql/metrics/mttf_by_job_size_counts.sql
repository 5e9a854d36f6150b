-- Per job size bucket (size_bucket: GPUs rounded up to a multiple of 8, Meta Fig. 7): job instances, runtime,
-- and infrastructure failures (job_failure_causes.infra_failure).
WITH sized AS (
    SELECT j.*, size_bucket(j.n_gpus) AS bucket_gpus
    FROM jobs j WHERE j.start_time IS NOT NULL AND j.end_time IS NOT NULL AND j.n_gpus > 0
)
SELECT s.bucket_gpus, count(*) AS instances, sum(s.elapsed_s) / 3600.0 AS runtime_hours,
       count(a.job_id) AS failures
FROM sized s LEFT JOIN job_failure_causes a
  ON a.job_id = s.job_id AND a.instance = s.instance AND a.infra_failure
GROUP BY s.bucket_gpus ORDER BY s.bucket_gpus
