-- lemon_features: Meta's seven lemon signals per node (RSC §IV-A) plus what
-- our data adds, over the trailing window [as_of - $window_days, as_of), for
-- every as_of in staged_as_of, for every host of node_population that had
-- appeared by then.
-- Inputs staged by analysis.nodes.lemons: staged_as_of(as_of), staged_excludes(job_id, submit_time, host).
CREATE OR REPLACE TABLE lemon_features AS
WITH hosts AS (
    SELECT * FROM node_population
), grid AS (
    SELECT h.host, h.first_seen, a.as_of, a.as_of - to_days($window_days) AS w_start
    FROM hosts h CROSS JOIN staged_as_of a WHERE h.first_seen < a.as_of
), excluded AS (
    SELECT g.host, g.as_of, count(DISTINCT x.job_id) AS n FROM grid g
    JOIN staged_excludes x ON x.host = g.host AND x.submit_time >= g.w_start AND x.submit_time < g.as_of
    GROUP BY ALL
), xids AS (
    SELECT g.host, g.as_of, count(DISTINCT e.code) AS n FROM grid g
    JOIN node_events e ON e.host = g.host AND e.kind = 'xid' AND e.event_time >= g.w_start AND e.event_time < g.as_of
    GROUP BY ALL
), tix AS (
    SELECT g.host, g.as_of, count(DISTINCT t.ticket_id) AS n, count(DISTINCT t.component) AS components
    FROM grid g JOIN tickets t ON t.host = g.host AND t.opened >= g.w_start AND t.opened < g.as_of
    GROUP BY ALL
), outs AS (
    -- taken out of service: drain/down/fail periods that are not planned maintenance
    -- periods overlapping the window: a node down since before it is out for all of it
    SELECT g.host, g.as_of, count(*) FILTER (WHERE p.time_start >= g.w_start) AS n,
           sum(date_diff('second', greatest(p.time_start, g.w_start), least(coalesce(p.time_end, g.as_of), g.as_of))) / 3600.0 AS hours
    FROM grid g JOIN node_states p ON p.host = g.host AND p.time_start < g.as_of
                                           AND coalesce(p.time_end, g.as_of) > g.w_start
    WHERE (p.state LIKE '%DRAIN%' OR p.state LIKE 'DOWN%' OR p.state LIKE '%FAIL%') AND coalesce(p.reason, '') NOT ILIKE 'maintenance%'
    GROUP BY ALL
), failed AS (
    -- infrastructure-ended instances and the nodes they ran on
    SELECT c.job_id, c.instance, c.end_time, coalesce(j.n_nodes, len(j.nodes)) AS n_nodes, c.host AS blamed,
           unnest(list_distinct(j.nodes)) AS host
    FROM job_failure_causes c JOIN jobs j USING (job_id, instance)
    WHERE c.infra_failure AND c.end_time IS NOT NULL
), fails AS (
    SELECT g.host, g.as_of,
           count(*) FILTER (WHERE f.n_nodes > 1) AS multi_node,
           count(*) FILTER (WHERE f.n_nodes <= 1) AS single_node,
           count(*) FILTER (WHERE f.blamed = f.host) AS blamed
    FROM grid g JOIN failed f ON f.host = g.host AND f.end_time >= g.w_start AND f.end_time < g.as_of
    GROUP BY ALL
), single_jobs AS (
    SELECT g.host, g.as_of, count(*) AS n FROM grid g
    JOIN (SELECT nodes[1] AS host, end_time FROM jobs WHERE len(nodes) = 1 AND end_time IS NOT NULL) j
      ON j.host = g.host AND j.end_time >= g.w_start AND j.end_time < g.as_of
    GROUP BY ALL
), incidents AS (
    SELECT g.host, g.as_of,
           count(*) FILTER (WHERE i.first_event >= g.w_start) AS in_window,
           count(*) FILTER (WHERE i.first_event >= g.w_start AND i.drained_at < g.as_of) AS n_drained,
           count(DISTINCT i.cause) FILTER (WHERE i.first_event >= g.w_start) AS causes,
           count(*) FILTER (WHERE i.drained_at < g.as_of) AS lifetime_drained
    FROM grid g JOIN incidents_as_of i ON i.host = g.host AND i.first_event < g.as_of
    GROUP BY ALL
), top_cause AS (
    -- the most repeated cause in the window: a lemon fails the same way again
    SELECT host, as_of, max(n) AS n FROM (
        SELECT g.host, g.as_of, i.cause, count(*) AS n FROM grid g
        JOIN incidents_as_of i ON i.host = g.host AND i.first_event >= g.w_start AND i.first_event < g.as_of
        GROUP BY ALL) GROUP BY ALL
), bench_fails AS (
    -- validation runs the node failed (goodput criteria's verdicts)
    SELECT g.host, g.as_of, count(DISTINCT v.run_id) AS n FROM grid g
    JOIN benchmark_verdicts v ON v.host = g.host AND v.verdict = 'fail' AND v.run_time >= g.w_start AND v.run_time < g.as_of
    GROUP BY ALL
), slow AS (
    -- jobs the node straggled in (straggler_episodes, analysis/derive/stragglers.py) that ended in the window,
    -- but for the stragglers that moved with their job
    SELECT g.host, g.as_of, count(DISTINCT e.job_id) AS n FROM grid g
    JOIN straggler_episodes e ON e.host = g.host AND e.origin <> 'job' AND e.end_time >= g.w_start AND e.end_time < g.as_of
    GROUP BY ALL
), repaired AS (
    SELECT g.host, g.as_of, max(t.closed) AS last_repair FROM grid g
    JOIN tickets t ON t.host = g.host AND t.closed < g.as_of GROUP BY ALL
)
SELECT g.host, g.as_of, $window_days::INTEGER AS window_days,
       coalesce(ex.n, 0) AS excluded_jobs,
       coalesce(x.n, 0) AS distinct_xids,
       coalesce(t.n, 0) AS tickets,
       coalesce(o.n, 0) AS out_of_service,
       coalesce(f.multi_node, 0) AS multi_node_failures,
       coalesce(f.single_node, 0) AS single_node_failures,
       coalesce(f.single_node, 0) / greatest(coalesce(s.n, 0), coalesce(f.single_node, 0), 1)::DOUBLE AS single_node_failure_rate,
       coalesce(f.blamed, 0) AS blamed_failures,
       coalesce(i.in_window, 0) AS incidents,
       coalesce(i.n_drained, 0) AS drained_incidents,
       coalesce(i.causes, 0) AS distinct_causes,
       coalesce(tc.n, 0) AS repeated_cause_incidents,
       coalesce(t.components, 0) AS ticket_components,
       coalesce(o.hours, 0) AS hours_out_of_service,
       -- lifetime rate of incidents that took the node out of service, per 30 days at risk:
       -- a lemon stays one, and a month's window is noisy
       coalesce(i.lifetime_drained, 0) * 30.0 / greatest(date_diff('second', g.first_seen, g.as_of) / 86400.0, 1) AS drained_incidents_per_30d,
       date_diff('second', r.last_repair, g.as_of) / 86400.0 AS days_since_repair,
       coalesce(bf.n, 0) AS benchmark_failures,
       coalesce(sl.n, 0) AS straggler_jobs
FROM grid g
LEFT JOIN excluded ex USING (host, as_of) LEFT JOIN xids x USING (host, as_of) LEFT JOIN tix t USING (host, as_of)
LEFT JOIN outs o USING (host, as_of) LEFT JOIN fails f USING (host, as_of) LEFT JOIN single_jobs s USING (host, as_of)
LEFT JOIN incidents i USING (host, as_of) LEFT JOIN top_cause tc USING (host, as_of) LEFT JOIN repaired r USING (host, as_of)
LEFT JOIN bench_fails bf USING (host, as_of) LEFT JOIN slow sl USING (host, as_of)
ORDER BY g.as_of, g.host;
