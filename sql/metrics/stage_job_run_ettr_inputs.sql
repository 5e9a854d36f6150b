-- job_run_ettr_inputs_now (TEMP): what build_job_run_ettr and build_run_downtime read, as job_run_ettr_inputs
-- keeps it. Per run, a digest of every row its instances join: job_runs, jobs, the failure_attribution rows either
-- statement reads (the primary one, the critical and warning ones), and the progress lines and app events of the
-- run's jobs (run_downtime matches them by job id, its own or the next instance's: both in the run), these summed
-- per job first (a job's instances are in one run). Per day, the drains run_downtime matches by host against an
-- interruption's window (rows without a time match none).
CREATE OR REPLACE TEMP TABLE job_run_ettr_inputs_now AS
WITH logged AS (
    SELECT job_id, hash('line', log_time) AS h FROM job_log_lines
    WHERE kind = 'progress' AND log_time IS NOT NULL AND job_id IS NOT NULL
    UNION ALL
    SELECT job_id, hash('event', kind, event_time) FROM node_events
    WHERE source = 'app' AND kind IN ('watchdog_timeout', 'watchdog_position', 'peer_error', 'nccl_error')
      AND event_time IS NOT NULL AND job_id IS NOT NULL
), per_job AS (
    SELECT job_id, count(*) AS n, sum(h)::HUGEINT AS digest FROM logged GROUP BY job_id
), hashed AS (
    SELECT r.run_id, 1 AS n,
           hash(r.run_seq, r.job_id, r.instance, r.state, r.failure, j.state, j.account, j.n_gpus, j.n_nodes,
                j.eligible_time, j.submit_time, j.start_time, j.end_time, a.is_primary, a.cause, a.domain, a.host,
                a.severity, a.event_time)::HUGEINT AS digest
    FROM job_runs r
    LEFT JOIN jobs j USING (job_id, instance)
    LEFT JOIN failure_attribution a ON a.job_id = r.job_id AND a.instance = r.instance
     AND (a.is_primary OR a.severity IN ('critical', 'warning'))
    UNION ALL
    SELECT m.run_id, p.n, p.digest FROM per_job p JOIN (SELECT DISTINCT job_id, run_id FROM job_runs) m USING (job_id)
)
SELECT 'run' AS kind, run_id, NULL::TIMESTAMP AS day, sum(n)::BIGINT AS n, sum(digest)::HUGEINT AS digest
FROM hashed GROUP BY run_id
UNION ALL
SELECT 'drains', NULL, date_trunc('day', time_start), count(*), sum(hash(host, time_start))::HUGEINT
FROM node_states WHERE (state LIKE '%DRAIN%' OR state LIKE 'DOWN%') AND time_start IS NOT NULL GROUP BY ALL;
