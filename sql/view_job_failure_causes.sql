-- One row per failed (or event-ended) job instance: its primary cause.
CREATE OR REPLACE VIEW job_failure_causes AS
SELECT a.job_id, a.instance, a.state, a.end_time, a.cause, a.domain, a.host, a.rule, a.event_time,
       j.n_gpus, j.n_nodes, j.elapsed_s, j.user_name, j.job_name
FROM failure_attribution a JOIN jobs j USING (job_id, instance)
WHERE a.is_primary;
