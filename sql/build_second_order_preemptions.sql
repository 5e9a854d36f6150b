-- second_order_preemptions: jobs PREEMPTED to make room for a failed job's
-- requeue. A preemption is second-order when an instance k > 0 of a job whose
-- previous instance ended in an infrastructure failure (a primary cause
-- outside the user domain) started within $window_s after the preemption, on
-- nodes the preempted job held.
CREATE OR REPLACE TABLE second_order_preemptions AS
WITH restarts AS (
    SELECT k.job_id, k.instance, k.start_time, k.nodes, a.cause AS failure_cause
    FROM jobs k
    JOIN jobs prev ON prev.job_id = k.job_id AND prev.instance = k.instance - 1
    JOIN job_failure_causes a ON a.job_id = prev.job_id AND a.instance = prev.instance
    WHERE k.instance > 0 AND k.start_time IS NOT NULL AND a.infra_failure
), pairs AS (
    SELECT p.job_id, p.instance, p.end_time AS preempted_at, p.n_gpus, p.elapsed_s,
           r.job_id AS by_job_id, r.instance AS by_instance, r.failure_cause,
           row_number() OVER (PARTITION BY p.job_id, p.instance ORDER BY r.start_time, r.job_id) AS pick
    FROM jobs p JOIN restarts r
      ON r.start_time BETWEEN p.end_time AND p.end_time + to_seconds($window_s)
     AND list_has_any(p.nodes, r.nodes)
    WHERE p.state = 'PREEMPTED'
)
SELECT job_id, instance, preempted_at, n_gpus, least(elapsed_s, $dt_s / 2) * n_gpus / 3600.0 AS lost_gpu_hours,
       by_job_id, by_instance, failure_cause
FROM pairs WHERE pick = 1 ORDER BY preempted_at;
