-- job_run_ettr_inputs_now (TEMP): what build_job_run_ettr and build_run_downtime read, as job_run_ettr_inputs
-- keeps it: per run, a digest of every row its instances join (job_runs, jobs, and the failure_attribution rows
-- either statement reads: the primary one, the critical and warning ones); per day, the progress lines, the app
-- events and the drains run_downtime matches against an interruption's windows (rows without a time match none).
CREATE OR REPLACE TEMP TABLE job_run_ettr_inputs_now AS
SELECT 'run' AS kind, r.run_id, NULL::TIMESTAMP AS day, count(*) AS n,
       sum(hash(r.run_seq, r.job_id, r.instance, r.state, r.failure, j.state, j.account, j.n_gpus, j.n_nodes,
                j.eligible_time, j.submit_time, j.start_time, j.end_time, a.is_primary, a.cause, a.domain, a.host,
                a.severity, a.event_time))::HUGEINT AS digest
FROM job_runs r
LEFT JOIN jobs j USING (job_id, instance)
LEFT JOIN failure_attribution a ON a.job_id = r.job_id AND a.instance = r.instance
 AND (a.is_primary OR a.severity IN ('critical', 'warning'))
GROUP BY r.run_id
UNION ALL
SELECT 'lines', NULL, date_trunc('day', log_time), count(*), sum(hash(job_id, log_time))::HUGEINT
FROM job_log_lines WHERE kind = 'progress' AND log_time IS NOT NULL GROUP BY ALL
UNION ALL
SELECT 'events', NULL, date_trunc('day', event_time), count(*), sum(hash(job_id, kind, event_time))::HUGEINT
FROM node_events
WHERE source = 'app' AND kind IN ('watchdog_timeout', 'watchdog_position', 'peer_error', 'nccl_error')
  AND job_id IS NOT NULL AND event_time IS NOT NULL
GROUP BY ALL
UNION ALL
SELECT 'drains', NULL, date_trunc('day', time_start), count(*), sum(hash(host, time_start))::HUGEINT
FROM node_states WHERE (state LIKE '%DRAIN%' OR state LIKE 'DOWN%') AND time_start IS NOT NULL GROUP BY ALL;
