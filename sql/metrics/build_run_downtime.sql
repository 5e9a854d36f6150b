-- run_downtime (C4): error-induced downtime of each run, per interruption
-- summed: post-checkpoint rework (work since the last checkpoint), detection
-- (first critical/warning event in the window -> the job's end; where the job's
-- own log shows it, from its last progress line to its first watchdog timeout,
-- NCCL or transport error: how long it hung before anything noticed), diagnosis
-- and isolation (the job's end -> the blamed node drained, within 6 h), and
-- re-initialisation (the end -> the next instance running, plus u0; where the
-- next instance logs progress, plus its start -> its first progress line instead).
-- Staged (TEMP) for the runs of job_run_ettr_scope, with their staged_job_run_ettr rows (u0, Δt).
CREATE OR REPLACE TEMP TABLE staged_run_downtime AS
WITH inst AS (
    SELECT r.run_id, r.run_seq, r.job_id, r.instance, j.state, j.start_time, j.end_time,
           epoch(j.end_time) - epoch(j.start_time) AS run_s,
           lead(j.start_time) OVER (PARTITION BY r.run_id ORDER BY r.run_seq) AS next_start,
           lead(j.job_id) OVER (PARTITION BY r.run_id ORDER BY r.run_seq) AS next_job_id,
           lead(j.end_time) OVER (PARTITION BY r.run_id ORDER BY r.run_seq) AS next_end
    FROM job_runs r JOIN jobs j USING (job_id, instance)
    WHERE j.end_time IS NOT NULL AND r.run_id IN (SELECT run_id FROM job_run_ettr_scope)
), interrupted AS (
    SELECT i.*, e.u0_s, e.dt_s FROM inst i JOIN staged_job_run_ettr e USING (run_id)
    WHERE i.next_start IS NOT NULL AND i.state NOT IN ('COMPLETED', 'PREEMPTED')
), first_event AS (
    SELECT job_id, instance, min(event_time) AS first_event
    FROM failure_attribution WHERE severity IN ('critical', 'warning') GROUP BY ALL
), blamed AS (
    SELECT job_id, instance, host FROM failure_attribution WHERE is_primary AND host IS NOT NULL
), drains AS (
    SELECT host, time_start FROM node_states WHERE state LIKE '%DRAIN%' OR state LIKE 'DOWN%'
), progress AS (
    SELECT i.job_id, i.instance, max(l.log_time) AS last_progress
    FROM interrupted i JOIN job_log_lines l ON l.job_id = i.job_id AND l.kind = 'progress'
     AND l.log_time BETWEEN i.start_time AND i.end_time
    GROUP BY ALL
), noticed AS (
    SELECT i.job_id, i.instance, min(e.event_time) AS failure_seen
    FROM interrupted i JOIN node_events e ON e.job_id = i.job_id AND e.source = 'app'
     AND e.kind IN ('watchdog_timeout', 'watchdog_position', 'peer_error', 'nccl_error')
     AND e.event_time BETWEEN i.start_time AND i.end_time + INTERVAL 5 MINUTE
    GROUP BY ALL
), restarted AS (
    -- the next instance's first progress line: when it was training again
    SELECT i.job_id, i.instance, min(l.log_time) AS first_progress
    FROM interrupted i JOIN job_log_lines l ON l.job_id = i.next_job_id AND l.kind = 'progress'
     AND l.log_time BETWEEN i.next_start AND coalesce(i.next_end, i.next_start + INTERVAL 1 DAY)
    GROUP BY ALL
), with_drain AS (
    SELECT i.*, f.first_event, b.host, p.last_progress, n.failure_seen, r.first_progress,
           (SELECT min(d.time_start) FROM drains d WHERE d.host = b.host AND d.time_start >= i.end_time - INTERVAL 10 MINUTE
              AND d.time_start <= i.end_time + INTERVAL 6 HOUR) AS drained_at
    FROM interrupted i LEFT JOIN first_event f USING (job_id, instance) LEFT JOIN blamed b USING (job_id, instance)
    LEFT JOIN progress p USING (job_id, instance) LEFT JOIN noticed n USING (job_id, instance)
    LEFT JOIN restarted r USING (job_id, instance)
)
SELECT run_id, count(*) AS interruptions,
       sum(CASE WHEN run_s > u0_s THEN (run_s - u0_s) % dt_s ELSE 0 END) AS rework_s,
       sum(greatest(0, CASE WHEN failure_seen >= last_progress THEN epoch(failure_seen) - epoch(last_progress)
                            ELSE coalesce(epoch(end_time) - epoch(first_event), 0) END)) AS detection_s,
       count(*) FILTER (WHERE failure_seen >= last_progress) AS detection_from_logs,
       sum(greatest(0, coalesce(epoch(drained_at) - epoch(end_time), 0))) AS diagnosis_isolation_s,
       sum(greatest(0, epoch(next_start) - epoch(end_time))
           + coalesce(epoch(first_progress) - epoch(next_start), u0_s)) AS reinit_s,
       count(*) FILTER (WHERE first_progress IS NOT NULL) AS reinit_from_logs
FROM with_drain GROUP BY run_id ORDER BY run_id;
