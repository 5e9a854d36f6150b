-- node_lifecycle: each node's way through goodput's loop as of $as_of, one row per step, from the records alone
-- (analysis/nodes/lifecycle.py; docs/operations.md#the-node-lifecycle):
--   watch, drain_after_job, drain_now  goodput's decision changed (node_action_history, as-of by as-of)
--   cleared          goodput no longer lists the node (on the list at one as-of, off it at the next)
--   drained          Slurm took it out of service (node_outages, planned work left out); by_goodput when the
--                    reason carries goodput's tag ("goodput: <action> <cause> score=..."), whose cause it keeps
--   in_repair        a repair ticket opened for it (from 2 days before the drain to its end)
--   awaiting_validation  that ticket closed: repaired, not yet shown to work
--   validated, failed_validation  the validation results after the repair (or after the drain, with no
--                    ticket) while it is out: a benchmark run (benchmark_verdicts: any fail fails it) or a
--                    health check (pass or fail); each change of verdict is a step, repeats are not
--   escalated        the $escalate_drains-th repair attempt for one component (a drain, or a failed validation:
--                    the repair did not hold) within $escalate_days: send it for RMA / hardware inspection
--   resumed          back in service (the outage ended), after a passing validation or without one
-- component: the taxonomy component (taxonomy_causes) of the drain's cause. Only records before $as_of count.
CREATE OR REPLACE TABLE node_lifecycle AS
WITH history AS (
    SELECT * FROM node_action_history WHERE as_of <= $as_of
), as_ofs AS (
    SELECT as_of, lag(as_of) OVER (ORDER BY as_of) AS previous FROM (SELECT DISTINCT as_of FROM history)
), decided AS (
    SELECT host, as_of AS step_time, action AS state, 'goodput' AS source, NULL::VARCHAR AS outage_id, cause,
           action || ' (action score ' || format('{:.2f}', score) || '): ' || coalesce(reason, '') AS evidence
    FROM (SELECT *, lag(action) OVER (PARTITION BY host ORDER BY as_of) AS before FROM history)
    WHERE before IS DISTINCT FROM action
), cleared AS (
    SELECT h.host, a.as_of AS step_time, 'cleared' AS state, 'goodput' AS source, NULL::VARCHAR AS outage_id, h.cause,
           'no longer listed as of ' || strftime(a.as_of, '%Y-%m-%d') || ' (was ' || h.action || ')' AS evidence
    FROM history h JOIN as_ofs a ON a.previous = h.as_of
    WHERE NOT EXISTS (SELECT 1 FROM history x WHERE x.host = h.host AND x.as_of = a.as_of)
), outages AS (
    SELECT o.outage_id, o.host, o.time_start, CASE WHEN o.time_end < $as_of THEN o.time_end END AS time_end,
           o.reason, starts_with(coalesce(o.reason, ''), 'goodput:') AS by_goodput,
           coalesce(nullif(regexp_extract(o.reason, '^goodput: \S+ (\S+)', 1), ''), o.cause) AS cause
    FROM node_outages o WHERE NOT o.planned AND o.time_start < $as_of
), parts AS (
    SELECT o.*, coalesce(c.component, 'Unknown') AS component,
           coalesce(o.time_end, $as_of::TIMESTAMP) AS until
    FROM outages o LEFT JOIN taxonomy_causes c USING (cause)
), drained AS (
    SELECT host, time_start AS step_time, 'drained' AS state, 'slurm' AS source, outage_id, cause,
           CASE WHEN by_goodput THEN 'drained by ' || reason ELSE 'drained: ' || coalesce(reason, 'no reason recorded') END
           || ' (' || component || ')' AS evidence
    FROM parts
), tickets_in AS (
    -- the first ticket opened for the outage
    -- (ties on the time broken by the ticket id: the same input gives the same steps, run after run)
    SELECT p.outage_id, arg_min(t.ticket_id, (t.opened, t.ticket_id)) AS ticket_id, min(t.opened) AS opened,
           arg_min(t.closed, (t.opened, t.ticket_id)) AS closed,
           arg_min(t.component, (t.opened, t.ticket_id)) AS ticket_component,
           arg_min(t.resolution, (t.opened, t.ticket_id)) AS resolution
    FROM parts p JOIN tickets t ON t.host = p.host AND t.opened >= p.time_start - INTERVAL 2 DAY
                              AND t.opened < p.until AND t.opened < $as_of
    GROUP BY p.outage_id
), repair AS (
    SELECT p.host, greatest(k.opened, p.time_start) AS step_time, 'in_repair' AS state, 'ticket' AS source, p.outage_id, p.cause,
           'ticket ' || k.ticket_id || ' opened' || coalesce(' (' || k.ticket_component || ')', '') AS evidence
    FROM parts p JOIN tickets_in k USING (outage_id)
    UNION ALL
    SELECT p.host, k.closed AS step_time, 'awaiting_validation', 'ticket', p.outage_id, p.cause,
           'ticket ' || k.ticket_id || ' closed' || coalesce(': ' || k.resolution, '')
    FROM parts p JOIN tickets_in k USING (outage_id) WHERE k.closed < $as_of
), checks AS (
    -- validation results: a benchmark run as a whole, a health check one by one
    SELECT host, min(run_time) AS step_time, NOT bool_or(verdict = 'fail') AS passed, 'benchmark' AS source,
           'validation run ' || run_id || CASE WHEN bool_or(verdict = 'fail')
               THEN ' failed: ' || array_to_string(list(DISTINCT benchmark || '/' || metric ORDER BY benchmark || '/' || metric) FILTER (WHERE verdict = 'fail')[1:3], ', ')
               ELSE ' passed (' || count(DISTINCT benchmark) || ' benchmark' || CASE WHEN count(DISTINCT benchmark) = 1 THEN '' ELSE 's' END || ')' END AS evidence
    FROM benchmark_verdicts WHERE run_time < $as_of GROUP BY host, run_id
    UNION ALL
    SELECT host, event_time, lower(severity) IN ('ok', 'pass', 'passed', 'info', 'success'), 'health',
           'health check ' || coalesce(code, kind) || CASE WHEN lower(severity) IN ('ok', 'pass', 'passed', 'info', 'success')
               THEN ' passed' ELSE ' failed: ' || coalesce(message, severity) END
    FROM node_events
    WHERE source = 'health' AND event_time < $as_of
      AND lower(severity) IN ('ok', 'pass', 'passed', 'info', 'success', 'critical', 'error', 'fail', 'failed')
    UNION ALL
    -- a Kubernetes health agent (NVSentinel, gpud, node-problem-detector): its recovery passes, a critical event
    -- fails; its other events (warnings, an XID 13 it calls info) are no verdict
    SELECT host, event_time, kind = 'health_ok', 'health',
           'health agent check ' || coalesce(code, kind) || CASE WHEN kind = 'health_ok' THEN ' recovered'
                                                                 ELSE ' failed: ' || coalesce(message, severity) END
    FROM node_events
    WHERE source = 'node_health' AND event_time < $as_of
      AND (kind = 'health_ok' OR lower(severity) IN ('critical', 'error', 'fail', 'failed', 'fatal'))
), validated AS (
    -- after the repair (the ticket's close, else the drain) while the node is out; a step where the verdict changes
    SELECT p.host, c.step_time, CASE WHEN c.passed THEN 'validated' ELSE 'failed_validation' END AS state, c.source,
           p.outage_id, p.cause, c.evidence,
           c.passed IS DISTINCT FROM lag(c.passed) OVER (PARTITION BY p.outage_id ORDER BY c.step_time, c.source, c.evidence) AS changed
    FROM parts p LEFT JOIN tickets_in k USING (outage_id)
    JOIN checks c ON c.host = p.host AND c.step_time > coalesce(k.closed, p.time_start) AND c.step_time < p.until
    WHERE k.ticket_id IS NULL OR k.closed < $as_of
), attempts AS (
    -- repair attempts per component: each drain, and a repair that did not hold (a ticket closed, then its first
    -- failed validation); a check failing again and again while the node waits for repair is one state, not attempts
    SELECT p.host, p.component, p.outage_id, p.cause, p.time_start AS step_time FROM parts p
    UNION ALL
    SELECT v.host, p.component, v.outage_id, v.cause, min(v.step_time) FROM validated v JOIN parts p USING (outage_id)
    JOIN tickets_in k USING (outage_id)
    WHERE v.state = 'failed_validation' AND v.step_time > k.closed
    GROUP BY v.host, p.component, v.outage_id, v.cause
), counted AS (
    -- the attempts for the same component in the window ending at each (a few per node: a join, not a window)
    SELECT a.host, a.component, a.outage_id, a.cause, a.step_time, count(*) AS n,
           list(strftime(b.step_time, '%Y-%m-%d') ORDER BY b.step_time) AS dates
    FROM attempts a JOIN attempts b ON b.host = a.host AND b.component = a.component
                                   AND b.step_time > a.step_time - to_days($escalate_days) AND b.step_time <= a.step_time
    GROUP BY a.host, a.component, a.outage_id, a.cause, a.step_time
), escalated AS (
    SELECT host, step_time, 'escalated' AS state, 'goodput' AS source, outage_id, cause,
           n || ' repair attempts for ' || component || ' in ' || $escalate_days || ' days ('
           || CASE WHEN n <= 4 THEN array_to_string(dates, ', ') ELSE dates[1] || ' to ' || dates[-1] END
           || '): send for RMA / hardware inspection' AS evidence
    FROM counted WHERE n >= $escalate_drains AND component <> 'Unknown'
), resumed AS (
    SELECT p.host, p.time_end AS step_time, 'resumed' AS state, 'slurm' AS source, p.outage_id, p.cause,
           'back in service' || coalesce(' after ' || (SELECT arg_max(v.evidence, (v.step_time, v.evidence)) FROM validated v
                                                       WHERE v.outage_id = p.outage_id AND v.state = 'validated'),
                                         ' without a validation result') AS evidence
    FROM parts p WHERE p.time_end IS NOT NULL
), steps AS (
    SELECT * FROM decided UNION ALL SELECT * FROM cleared UNION ALL SELECT * FROM drained
    UNION ALL SELECT * FROM repair UNION ALL SELECT * EXCLUDE (changed) FROM validated WHERE changed
    UNION ALL SELECT * FROM escalated UNION ALL SELECT * FROM resumed
)
SELECT s.host, row_number() OVER (
           PARTITION BY s.host ORDER BY s.step_time,
           list_position(['watch', 'drain_after_job', 'drain_now', 'cleared', 'drained', 'in_repair', 'awaiting_validation',
                          'failed_validation', 'validated', 'escalated', 'resumed'], s.state), s.evidence) AS step,
       s.step_time, s.state, s.source, s.evidence, s.cause, p.component, s.outage_id, coalesce(p.by_goodput, false) AS by_goodput
FROM steps s LEFT JOIN parts p USING (outage_id)
ORDER BY s.host, step;
