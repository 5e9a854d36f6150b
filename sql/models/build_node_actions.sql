-- staged_node_actions (stored as node_actions by models/store_node_actions.sql): what the scheduler should do
-- with each node as of $as_of, by
-- an escalation ladder over the evidence of the last $expiry_days days:
--   drain_now        a lemon, a confirmed, critical, non-transient incident since
--                    the node's last repair, or a repeated validation failure (its
--                    latest run failed, and at least $bench_min_failed runs and
--                    $bench_min_share of its runs in the last $bench_days days did);
--   drain_after_job  $repeat_min or more confirmed incidents, a failed latest validation
--                    run (re-validate before new work), or a 7-day incident
--                    probability of at least $risk_p7 (node_risk's Cox-Time, when it could be trained);
--   watch            any other incident.
-- An escalated node (node_lifecycle: repeated repair attempts for one component) is drained now, for RMA.
-- A slow node (straggler_episodes: a node's workers slower than their peers, in two or more jobs that ended
-- before $as_of, more often than chance; analysis/derive/stragglers.py) is validated before new work
-- (drain_after_job), its jobs the evidence.
-- A repeat offender (repeat_offenders, analysis/nodes/offenders.py: more hardware incidents in its own
-- history than chance gives at the fleet's rate) is drained: at once when one part failed again and again
-- (escalation rma) and no repair since, after its job otherwise; it stays listed while clean, as a lemon does.
-- An incident is confirmed when it took the node out of service or was blamed
-- for a job failure: a critical line nobody acted on and no job felt is watched, not drained.
-- A repair ticket closed after an incident repairs it, and one still open holds the node;
-- with no ticket either way, the clean evidence after it (clean_evidence,
-- sql/models/build_clean_evidence.sql: passing health checks, completed multi-hour jobs, a
-- reboot or a return from DRAIN) returns the node to service. The reason states the
-- evidence either way.
-- A node that returned to service after its last incident and stayed clean for
-- $clean_days leaves the list; every entry expires $expiry_days after its last evidence.
CREATE OR REPLACE TEMP TABLE staged_node_actions AS
-- Only what was known before $as_of counts: a drain, a return to service, a
-- ticket or a job failure dated later is the future (goodput models --as-of).
WITH window_incidents AS (
    SELECT i.* REPLACE (least(i.last_event, $as_of) AS last_event,
                        CASE WHEN i.returned_at < $as_of THEN i.returned_at END AS returned_at,
                        CASE WHEN i.ticket_id IN (SELECT ticket_id FROM tickets WHERE opened < $as_of) THEN i.ticket_id END AS ticket_id),
           EXISTS (SELECT 1 FROM tickets t WHERE t.ticket_id = i.ticket_id AND t.opened < $as_of)
               AND NOT EXISTS (SELECT 1 FROM tickets t WHERE t.ticket_id = i.ticket_id AND t.closed < $as_of) AS ticket_open,
           i.drained_at < $as_of OR EXISTS (SELECT 1 FROM failure_attribution a
                                             WHERE a.is_primary AND a.host = i.host AND a.end_time + to_seconds($after_s) < $as_of
                                               AND a.event_time BETWEEN i.first_event AND i.last_event) AS confirmed
    FROM incidents_as_of i
    WHERE i.first_event >= $as_of - to_days($expiry_days) AND i.first_event < $as_of
), last_repair AS (
    SELECT host, max(closed) AS repaired_at FROM tickets WHERE closed < $as_of GROUP BY host
), judged AS (
    -- a confirmed, critical, non-transient incident no ticket repaired: held, unless no ticket is
    -- open for it and the clean evidence after it returned the node to service
    SELECT w.*, r.repaired_at, e.checks_passed, e.jobs_completed, e.restarted_at, e.restarted_how, e.down_state,
           e.down_since, e.returned_to_service AND NOT coalesce(w.ticket_open, false) AS returned_to_service,
           w.confirmed AND w.severity = 'critical' AND NOT w.transient
               AND (r.repaired_at IS NULL OR w.first_event > r.repaired_at) AS unrepaired
    FROM window_incidents w LEFT JOIN last_repair r USING (host) LEFT JOIN clean_evidence e USING (incident_id)
), noted AS (
    SELECT *, unrepaired AND NOT coalesce(returned_to_service, false) AS held,
        CASE WHEN unrepaired THEN
            'critical ' || cause || ' on ' || strftime(last_event, '%Y-%m-%d %H:%M')
            || coalesce(' after the last repair (' || strftime(repaired_at, '%Y-%m-%d') || ')', '')
            || CASE WHEN ticket_open THEN '; ticket ' || ticket_id || ' still open: drain'
               ELSE '; since then ' || coalesce(checks_passed, 0) || ' passing health check'
                    || CASE WHEN coalesce(checks_passed, 0) = 1 THEN '' ELSE 's' END || ', '
                    || coalesce(jobs_completed, 0) || ' completed job' || CASE WHEN coalesce(jobs_completed, 0) = 1 THEN '' ELSE 's' END
                    || ' of ' || format('{:g}', $clean_job_s / 3600.0) || ' h or more, '
                    || coalesce(restarted_how || ' ' || strftime(restarted_at, '%Y-%m-%d %H:%M'), 'no reboot or return from drain')
                    || coalesce(', ' || down_state || ' since ' || strftime(down_since, '%Y-%m-%d %H:%M'), '')
                    || CASE WHEN returned_to_service THEN ': returned to service' ELSE ': no clean evidence, drain' END
               END
        END AS critical_note,
        -- the incident whose evidence is stated: the latest held one, else the latest returned to service
        coalesce(unrepaired, false) AND row_number() OVER (
            PARTITION BY host ORDER BY coalesce(unrepaired, false) DESC, held DESC, first_event DESC) = 1 AS stated
    FROM judged
), per_host AS (
    SELECT w.host, count(*) AS incidents, count(*) FILTER (WHERE w.confirmed) AS confirmed_incidents,
           bool_or(w.held) AS confirmed_since_repair,
           any_value(w.critical_note) FILTER (WHERE w.stated) AS critical_note,
           any_value(w.last_event) FILTER (WHERE w.stated) AS critical_event,
           any_value(coalesce(w.checks_passed, 0)) FILTER (WHERE w.stated) AS checks_passed,
           any_value(coalesce(w.jobs_completed, 0)) FILTER (WHERE w.stated) AS jobs_completed,
           any_value(w.restarted_at) FILTER (WHERE w.stated) AS restarted_at,
           NOT bool_or(w.held) FILTER (WHERE w.unrepaired) AS returned_to_service,
           min(w.first_event) AS first_evidence, max(w.last_event) AS last_evidence,
           first(w.cause ORDER BY w.confirmed DESC, w.severity = 'critical' DESC, w.first_event DESC) AS cause,
           list(w.first_event ORDER BY w.first_event) AS event_times,
           list(DISTINCT w.ticket_id ORDER BY w.ticket_id) FILTER (WHERE w.ticket_id IS NOT NULL) AS tickets,
           max(w.returned_at) AS returned_at
    FROM noted w
    GROUP BY w.host
), lemons AS (
    SELECT host, score, suggested_component, top_signals FROM lemon_scores WHERE as_of = $as_of AND is_lemon
), risk AS (
    -- Cox-Time only: a baseline gives every node (or every node with the same count) one
    -- probability, and would drain a whole class of nodes at once
    SELECT host, p_incident, model FROM node_risk WHERE as_of = $as_of AND horizon_days = 7 AND model = 'cox_time'
), jobs_hit AS (
    SELECT a.host, list(DISTINCT a.job_id ORDER BY a.job_id) AS jobs FROM failure_attribution a
    WHERE a.is_primary AND a.event_time >= $as_of - to_days($expiry_days) AND a.end_time + to_seconds($after_s) < $as_of
    GROUP BY a.host
), bench_runs AS (
    -- validation runs before $as_of: did the node fail each, and on which metrics
    SELECT host, run_id, min(run_time) AS run_time, bool_or(verdict = 'fail') AS failed,
           list(DISTINCT benchmark || '/' || metric ORDER BY benchmark || '/' || metric) FILTER (WHERE verdict = 'fail') AS failing
    FROM benchmark_verdicts WHERE run_time < $as_of AND run_time >= $as_of - to_days($bench_days) GROUP BY host, run_id
), bench AS (
    -- held only by a failed latest run within the expiry window: a later pass releases the node
    SELECT host, arg_max(run_id, run_time) AS bench_run, max(run_time) AS bench_time,
           arg_max(failing, run_time) AS bench_failing,
           count(*) FILTER (WHERE failed) >= $bench_min_failed AND count(*) FILTER (WHERE failed) >= $bench_min_share * count(*) AS bench_repeated
    FROM bench_runs GROUP BY host
    HAVING arg_max(failed, run_time) AND max(run_time) >= $as_of - to_days($expiry_days)
), offenders AS (
    -- repaired (a ticket closed) since its last incident: the part was dealt with; validate it before new work
    SELECT o.host, CASE WHEN o.escalation = 'rma' AND (r.repaired_at IS NULL OR r.repaired_at < o.last_incident)
                        THEN 'rma' ELSE 'repair' END AS escalation,
           o.reason || CASE WHEN r.repaired_at >= o.last_incident
                            THEN '; repaired ' || strftime(r.repaired_at, '%Y-%m-%d') || ' since: validate before new work'
                            ELSE '' END AS offender_reason,
           o.top_cause AS offender_cause, o.incidents AS offender_incidents, o.threshold AS offender_threshold
    FROM repeat_offenders o LEFT JOIN last_repair r USING (host) WHERE o.as_of = $as_of
), escalated AS (
    -- the node lifecycle's escalation (analysis/nodes/lifecycle.py): repeated repair attempts for one component,
    -- not back in service since: drain it now and send it for RMA / inspection
    SELECT e.host, arg_max(e.evidence, e.step_time) AS escalation_note, arg_max(e.cause, e.step_time) AS escalation_cause,
           arg_max(e.component, e.step_time) AS escalation_component, max(e.step_time) AS escalated_at
    FROM node_lifecycle e
    WHERE e.state = 'escalated' AND e.step_time < $as_of AND e.step_time >= $as_of - to_days($expiry_days)
      AND NOT EXISTS (SELECT 1 FROM node_lifecycle r WHERE r.host = e.host AND r.state = 'resumed' AND r.step_time > e.step_time)
    GROUP BY e.host
), slow AS (
    SELECT host, list(DISTINCT job_id ORDER BY job_id) AS slow_jobs, count(DISTINCT job_id) AS slow_job_count,
           median(slowdown) AS slow_factor, min(start_time) AS slow_first, max(end_time) AS slow_last
    FROM straggler_episodes
    WHERE basis = 'repeat' AND end_time < $as_of AND start_time >= $as_of - to_days($expiry_days)
    GROUP BY host HAVING count(DISTINCT job_id) >= 2
), candidates AS (
    SELECT coalesce(h.host, l.host, k.host, b.host, o.host, s.host, x.host) AS host, s.* EXCLUDE (host),
           s.host IS NOT NULL AS is_slow, x.* EXCLUDE (host), x.host IS NOT NULL AS is_escalated, o.* EXCLUDE (host), o.host IS NOT NULL AS is_offender, h.*  EXCLUDE (host), l.score AS lemon_score, l.suggested_component,
           l.top_signals, k.p_incident, k.model AS risk_model, l.host IS NOT NULL AS is_lemon,
           b.bench_run, b.bench_time, b.bench_failing, coalesce(b.bench_repeated, false) AS bench_repeated,
           b.host IS NOT NULL AS bench_failed
    FROM per_host h FULL JOIN lemons l USING (host) FULL JOIN (SELECT * FROM risk WHERE p_incident >= $risk_p7) k USING (host)
         FULL JOIN bench b USING (host) FULL JOIN offenders o USING (host) FULL JOIN slow s USING (host)
         FULL JOIN escalated x USING (host)
), laddered AS (
    SELECT c.*, j.jobs,
        CASE WHEN c.is_lemon OR c.confirmed_since_repair OR c.bench_repeated OR c.escalation = 'rma' OR c.is_escalated
             THEN 'drain_now'
             WHEN coalesce(c.confirmed_incidents, 0) >= $repeat_min OR c.p_incident IS NOT NULL OR c.bench_failed
                  OR c.is_offender OR c.is_slow THEN 'drain_after_job'
             ELSE 'watch' END AS action,
        -- back in service and clean since: the evidence no longer holds the node
        c.returned_at IS NOT NULL AND c.returned_at >= c.last_evidence
            AND c.returned_at <= $as_of - to_days($clean_days) AS stayed_clean
    FROM candidates c LEFT JOIN jobs_hit j USING (host)
)
SELECT host, $as_of::TIMESTAMP AS as_of, action,
       CASE WHEN is_escalated THEN 'escalated: ' || escalation_note || coalesce('; ' || critical_note, '')
            WHEN is_lemon THEN 'lemon node (' || coalesce(array_to_string(top_signals, ', '), 'signals') || ')'
                                || coalesce('; ' || offender_reason, '')
            WHEN is_offender THEN offender_reason || coalesce('; ' || critical_note, '')
            WHEN confirmed_since_repair THEN critical_note
            WHEN bench_repeated THEN 'failed validation again (' || bench_run || ': ' || array_to_string(bench_failing[1:3], ', ') || ')'
            WHEN coalesce(confirmed_incidents, 0) >= $repeat_min THEN confirmed_incidents || ' confirmed incidents in ' || $expiry_days || ' days'
            WHEN bench_failed THEN 'failed validation ' || bench_run || ' (' || array_to_string(bench_failing[1:3], ', ') || ')'
            WHEN is_slow THEN 'slow node: straggled in ' || slow_job_count || ' jobs at ' || format('{:.2f}', slow_factor)
                              || 'x the pace of its peers (median): validate before new work'
            WHEN p_incident IS NOT NULL THEN 'incident risk ' || round(p_incident, 2) || ' within 7 days (' || risk_model || ')'
            ELSE 'first incident: ' || cause END
       -- a node held for something else, or only watched, says why its critical incident does not drain it
       || CASE WHEN NOT is_lemon AND NOT is_offender AND NOT coalesce(confirmed_since_repair, false) AND NOT is_escalated
               THEN coalesce('; ' || critical_note, '') ELSE '' END AS reason,
       CASE WHEN NOT is_lemon AND NOT coalesce(confirmed_since_repair, false)
                 AND (bench_repeated OR (bench_failed AND coalesce(confirmed_incidents, 0) < $repeat_min)) THEN 'benchmark'
            WHEN is_escalated THEN coalesce(escalation_cause, cause, 'escalated')
            WHEN is_offender AND NOT is_lemon THEN offender_cause
            ELSE coalesce(cause, CASE WHEN is_lemon THEN 'lemon' WHEN is_slow THEN 'degraded_pace' ELSE 'risk' END) END AS cause,
       -- the action score (docs/methods.md#node-actions), 0-1, two decimals: the number every export, the report
       -- and `goodput why` show. The strongest of the evidence that holds the node: the lemon score, the 7-day
       -- incident risk, confirmed incidents / 4, a repeat offender's incidents over twice its threshold, jobs
       -- straggled in / 4; 1 for an unrepaired critical incident, a repeated validation failure or an RMA, 0.5 for a
       -- failed latest validation. A watched node with none of these scores 0.
       round(greatest(coalesce(lemon_score, 0), coalesce(p_incident, 0), least(coalesce(confirmed_incidents, 0) / 4.0, 1),
                      least(coalesce(offender_incidents, 0) / (2.0 * coalesce(offender_threshold, 1)), 1),
                      least(coalesce(slow_job_count, 0) / 4.0, 1),
                      CASE WHEN coalesce(confirmed_since_repair, false) OR bench_repeated OR escalation = 'rma'
                                OR is_escalated THEN 1.0
                           WHEN bench_failed THEN 0.5 ELSE 0 END), 2) AS score,
       coalesce(event_times, []) AS event_times, list_sort(list_distinct(coalesce(jobs, []) || coalesce(slow_jobs, []))) AS jobs, coalesce(tickets, []) AS tickets,
       CASE WHEN bench_failed THEN [bench_run || ': ' || m FOR m IN bench_failing] ELSE [] END AS benchmarks,
       coalesce(least(first_evidence, bench_time, slow_first, escalated_at), $as_of::TIMESTAMP) AS since,
       coalesce(greatest(last_evidence, bench_time, slow_last, escalated_at), $as_of::TIMESTAMP) + to_days($expiry_days) AS expires,
       action = 'drain_now' AS suggest_ticket,
       coalesce(suggested_component, CASE WHEN is_escalated THEN escalation_component END,
                CASE WHEN escalation = 'rma' THEN offender_cause END) AS suggested_component,
       critical_event, checks_passed, jobs_completed, restarted_at, returned_to_service
FROM laddered
WHERE NOT coalesce(stayed_clean, false) OR is_lemon OR bench_failed OR is_offender OR is_slow OR is_escalated
ORDER BY action, host;
