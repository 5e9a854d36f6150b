-- second_order_preemptions: jobs PREEMPTED to make room for a failed job's
-- requeue. A preemption is second-order when an instance k > 0 of a job whose
-- previous instance ended in an infrastructure failure (a primary cause
-- outside the user domain) started within $window_s after the preemption, on
-- nodes the preempted job held.
-- Both sides are unnested to one row per host, so the pairs come from an
-- equi-join on the host (then the time window), not a comparison of every
-- preemption with every restart.
CREATE OR REPLACE TABLE second_order_preemptions AS
WITH restarts AS (
    SELECT k.job_id, k.instance, k.start_time, k.nodes, a.cause AS failure_cause
    FROM jobs k
    JOIN jobs prev ON prev.job_id = k.job_id AND prev.instance = k.instance - 1
    JOIN job_failure_causes a ON a.job_id = prev.job_id AND a.instance = prev.instance
    WHERE k.instance > 0 AND k.start_time IS NOT NULL AND a.infra_failure
), restart_hosts AS (
    SELECT job_id, instance, start_time, failure_cause, unnest(list_distinct(nodes)) AS host FROM restarts
), preempted AS (
    SELECT job_id, instance, end_time, n_gpus, elapsed_s, nodes FROM jobs
    WHERE state = 'PREEMPTED' AND end_time IS NOT NULL
), preempted_hosts AS (
    SELECT job_id, instance, end_time, unnest(list_distinct(nodes)) AS host FROM preempted
), pairs AS (
    SELECT DISTINCT p.job_id, p.instance, r.job_id AS by_job_id, r.instance AS by_instance, r.start_time, r.failure_cause
    FROM preempted_hosts p JOIN restart_hosts r
      ON r.host = p.host AND r.start_time BETWEEN p.end_time AND p.end_time + to_seconds($window_s)
), picked AS (
    SELECT * FROM pairs
    QUALIFY row_number() OVER (PARTITION BY job_id, instance ORDER BY start_time, by_job_id, by_instance) = 1
)
SELECT p.job_id, p.instance, p.end_time AS preempted_at, p.n_gpus,
       least(p.elapsed_s, $dt_s / 2) * p.n_gpus / 3600.0 AS lost_gpu_hours,
       k.by_job_id, k.by_instance, k.failure_cause
FROM picked k JOIN preempted p USING (job_id, instance)
ORDER BY preempted_at, job_id, instance;
