-- One row per failed (or event-ended) job instance: its primary cause.
-- is_failure, the one definition of a job failure (crash loops, job_runs, job_run_ettr.failures,
-- the report's losses and `goodput why` all count these): the instance ended FAILED, NODE_FAIL or
-- OUT_OF_MEMORY, or Slurm REQUEUED it and an event in its window explains it (every instance here
-- has a primary cause) - unless it is in maintenance_requeues: a requeue for maintenance is not a
-- failure (a requeue nothing explains is not here at all). TIMEOUT and CANCELLED are not failures,
-- whatever fired.
-- infra_failure: a failure the infrastructure caused - FAILED or NODE_FAIL with a cause outside
-- the user domain, or REQUEUED on a critical event (a TIMEOUT or CANCELLED that happened to see a
-- warning is not one).
-- maintenance_requeues: REQUEUED instances that ended while one of their nodes was in planned
-- maintenance (a node state whose reason starts with "maint", or a MAINT state, open at the end; a
-- minute's slack for the two clocks): Slurm requeued them to free the node, not because they failed.
CREATE OR REPLACE VIEW maintenance_requeues AS
SELECT DISTINCT r.job_id, r.instance
FROM (SELECT job_id, instance, end_time, unnest(nodes) AS host FROM jobs WHERE state = 'REQUEUED') r
JOIN node_states p
  ON p.host = r.host AND (p.state ILIKE '%MAINT%' OR coalesce(p.reason, '') ILIKE 'maint%')
 AND p.time_start <= r.end_time + INTERVAL 1 MINUTE AND coalesce(p.time_end, r.end_time) >= r.end_time;
CREATE OR REPLACE VIEW job_failure_causes AS
WITH judged AS (
    SELECT a.*, m.job_id IS NOT NULL AS maintenance,
           a.state IN ('FAILED', 'NODE_FAIL', 'OUT_OF_MEMORY') OR (a.state = 'REQUEUED' AND m.job_id IS NULL) AS is_failure
    FROM failure_attribution a LEFT JOIN maintenance_requeues m USING (job_id, instance)
    WHERE a.is_primary
)
SELECT a.job_id, a.instance, a.state, a.end_time, a.cause, a.domain, a.host, a.rule, a.event_time, a.severity,
       a.is_failure, a.maintenance,
       a.is_failure AND a.domain <> 'user'
           AND (a.state IN ('FAILED', 'NODE_FAIL') OR (a.state = 'REQUEUED' AND a.severity = 'critical')) AS infra_failure,
       j.n_gpus, j.n_nodes, j.elapsed_s, j.user_name, j.job_name
FROM judged a JOIN jobs j USING (job_id, instance);
