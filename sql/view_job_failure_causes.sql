-- One row per failed (or event-ended) job instance: its primary cause.
-- infra_failure: the instance was ended by the infrastructure - FAILED or
-- NODE_FAIL with a cause outside the user domain, or REQUEUED on a critical
-- event (a TIMEOUT or CANCELLED that happened to see a warning is not one).
CREATE OR REPLACE VIEW job_failure_causes AS
SELECT a.job_id, a.instance, a.state, a.end_time, a.cause, a.domain, a.host, a.rule, a.event_time, a.severity,
       a.domain <> 'user' AND (a.state IN ('FAILED', 'NODE_FAIL') OR (a.state = 'REQUEUED' AND a.severity = 'critical'))
           AS infra_failure,
       j.n_gpus, j.n_nodes, j.elapsed_s, j.user_name, j.job_name
FROM failure_attribution a JOIN jobs j USING (job_id, instance)
WHERE a.is_primary;
