-- clean_evidence (TEMP): what each node did after each of its critical, non-transient
-- incidents in the ladder's window, and whether that returns it to service when no
-- repair ticket closes the incident (a first run over months of logs often has no
-- tickets folder, and a node must not stay drained for an event it has long shown
-- to be behind it). Everything counted lies after the incident's last event and
-- before $as_of. The node must not be drained or down at $as_of, and then either
--   (a) at least $clean_checks health checks passed on it AND at least $clean_jobs jobs
--       that started on it after the event ran $clean_job_s seconds or more and ended
--       COMPLETED; or
--   (b) it restarted after the event -- the kernel booted (its first line, 'Linux
--       version ...') or Slurm brought it back from DRAIN/DOWN (a node_state_periods
--       period ended, the node IDLE again) -- and since the latest restart at least
--       $clean_checks health checks passed or one such job completed.
-- A health check passes with the severities health_check_first_seen calls passing; so does a Kubernetes health
-- agent's recovery (node_health, kind health_ok).
-- Tickets, when there are any, decide first (sql/models/build_node_actions.sql).
CREATE OR REPLACE TEMP TABLE clean_evidence AS
WITH crit AS (
    SELECT incident_id, host, cause, last_event AS event_time FROM incidents_as_of
    WHERE severity = 'critical' AND NOT transient
      AND first_event >= $as_of - to_days($expiry_days) AND first_event < $as_of
), ran AS (
    -- job instances that started on these nodes in the window
    SELECT u.* FROM (
        SELECT unnest(nodes) AS host, state, start_time, end_time FROM jobs
        WHERE start_time >= $as_of - to_days($expiry_days) AND start_time < $as_of
    ) u WHERE u.host IN (SELECT host FROM crit)
), good_jobs AS (
    SELECT host, start_time AS t FROM ran
    WHERE state = 'COMPLETED' AND end_time < $as_of AND end_time >= start_time + to_seconds($clean_job_s)
), checks AS (
    -- a Kubernetes health agent's recovery (NVSentinel isHealthy, a gpud Healthy state, a node-problem-detector
    -- condition back to normal: kind health_ok) passes as a health check does; its other events never do, whatever
    -- their severity (an XID 13 is 'info')
    SELECT host, event_time AS t FROM node_events
    WHERE ((source = 'health' AND lower(severity) IN ('ok', 'pass', 'passed', 'info', 'success'))
           OR (source = 'node_health' AND kind = 'health_ok'))
      AND event_time >= $as_of - to_days($expiry_days) AND event_time < $as_of AND host IN (SELECT host FROM crit)
), out_of_service AS (
    SELECT host, time_start, time_end, state FROM node_states
    WHERE (state LIKE '%DRAIN%' OR state LIKE 'DOWN%' OR state LIKE '%FAIL%') AND host IN (SELECT host FROM crit)
), restarts AS (
    SELECT host, event_time AS t, 'rebooted' AS how FROM node_events
    WHERE source = 'kernel' AND message LIKE 'Linux version %'
      AND event_time >= $as_of - to_days($expiry_days) AND event_time < $as_of AND host IN (SELECT host FROM crit)
    UNION ALL
    SELECT host, time_end, 'back from ' || state FROM out_of_service
    WHERE time_end >= $as_of - to_days($expiry_days) AND time_end < $as_of
), down_now AS (
    -- a period still open at $as_of (or closed only later, which is not known yet), unless a job
    -- started on the node after it began: Slurm starts none on a drained or down node, so that
    -- record was never closed
    SELECT o.host, arg_max(o.state, o.time_start) AS state, max(o.time_start) AS down_since FROM out_of_service o
    WHERE o.time_start < $as_of AND (o.time_end IS NULL OR o.time_end >= $as_of)
      AND NOT EXISTS (SELECT 1 FROM ran r WHERE r.host = o.host AND r.start_time > o.time_start)
    GROUP BY o.host
), restarted AS (
    SELECT c.incident_id, max(r.t) AS restarted_at, arg_max(r.how, r.t) AS restarted_how
    FROM crit c JOIN restarts r ON r.host = c.host AND r.t > c.event_time GROUP BY c.incident_id
), counted AS (
    SELECT c.*, r.restarted_at, r.restarted_how, d.state AS down_state, d.down_since,
           (SELECT count(*) FROM checks k WHERE k.host = c.host AND k.t > c.event_time) AS checks_passed,
           (SELECT count(*) FROM good_jobs j WHERE j.host = c.host AND j.t > c.event_time) AS jobs_completed,
           (SELECT count(*) FROM checks k WHERE k.host = c.host AND k.t > r.restarted_at) AS checks_after_restart,
           (SELECT count(*) FROM good_jobs j WHERE j.host = c.host AND j.t > r.restarted_at) AS jobs_after_restart
    FROM crit c LEFT JOIN restarted r USING (incident_id) LEFT JOIN down_now d USING (host)
)
SELECT incident_id, host, cause, event_time, checks_passed, jobs_completed, restarted_at, restarted_how,
       down_state, down_since,
       down_state IS NULL AND (
           (checks_passed >= $clean_checks AND jobs_completed >= $clean_jobs)
           OR (restarted_at IS NOT NULL AND (checks_after_restart >= $clean_checks OR jobs_after_restart >= 1))
       ) AS returned_to_service
FROM counted;
