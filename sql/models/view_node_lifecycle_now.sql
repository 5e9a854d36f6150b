-- node_lifecycle_now: each node's state now (node_lifecycle): while it is out of service, its latest step there
-- (drained, in repair, awaiting validation, validated, failed validation, escalated), whatever goodput decided
-- meanwhile; in service, its latest step of any kind. decision: goodput's latest (watch, drain_after_job,
-- drain_now, cleared); still_out and by_goodput: out of service in an outage goodput drained (what drain.sh may
-- resume once validated).
CREATE OR REPLACE VIEW node_lifecycle_now AS
WITH steps AS (
    SELECT l.*, l.source = 'goodput' AND l.state <> 'escalated' AS decided,
           o.outage_id IS NOT NULL AND o.time_end IS NULL AS open_outage
    FROM node_lifecycle l LEFT JOIN node_outages o USING (outage_id)
), physical AS (
    SELECT * FROM steps WHERE NOT decided QUALIFY row_number() OVER (PARTITION BY host ORDER BY step DESC) = 1
), decision AS (
    SELECT * FROM steps WHERE decided QUALIFY row_number() OVER (PARTITION BY host ORDER BY step DESC) = 1
), picked AS (
    SELECT coalesce(p.host, d.host) AS host, d.state AS decision,
           CASE WHEN d.host IS NULL OR p.open_outage OR p.step > d.step THEN p ELSE d END AS s,
           coalesce(p.open_outage, false) AS still_out
    FROM physical p FULL JOIN decision d USING (host)
)
SELECT host, s.state, s.step_time AS since, s.evidence, s.component, s.outage_id, coalesce(s.by_goodput, false) AS by_goodput,
       still_out, decision
FROM picked
