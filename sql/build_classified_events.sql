-- classified_events: each node event that a taxonomy rule explains, with the
-- winning rule (highest priority) among those that match it.
-- Rules naming a kind join on it (a hash join); the few without one are
-- checked against every event.
CREATE OR REPLACE TABLE classified_events AS
WITH events AS (
    SELECT * RENAME (severity AS event_severity) FROM node_events WHERE host IS NOT NULL
), rules AS (
    SELECT * RENAME (severity AS rule_severity) FROM taxonomy_rules
), matched AS (
    SELECT e.*, r.* FROM events e
    JOIN (SELECT *, unnest(m_kind) AS rule_kind FROM rules WHERE m_kind IS NOT NULL) r
      ON e.kind = r.rule_kind
    WHERE (r.m_source IS NULL OR list_contains(r.m_source, e.source))
      AND (r.m_code IS NULL OR list_contains(r.m_code, e.code))
      AND (r.m_severity IS NULL OR list_contains(r.m_severity, lower(e.event_severity)))
      AND (r.m_message IS NULL OR regexp_matches(e.message, r.m_message))
    UNION ALL BY NAME
    SELECT e.*, r.* FROM events e, rules r
    WHERE r.m_kind IS NULL
      AND (r.m_source IS NULL OR list_contains(r.m_source, e.source))
      AND (r.m_code IS NULL OR list_contains(r.m_code, e.code))
      AND (r.m_severity IS NULL OR list_contains(r.m_severity, lower(e.event_severity)))
      AND (r.m_message IS NULL OR regexp_matches(e.message, r.m_message))
), counted AS (
    -- a counting rule fires once it has seen count_n events on the host (or device) within its window
    SELECT m.*, (SELECT count(*) FROM matched o
                 WHERE o.rule_id = m.rule_id AND o.host = m.host
                   AND (m.count_per = 'host' OR o.device IS NOT DISTINCT FROM m.device)
                   AND o.event_time BETWEEN m.event_time - to_seconds(m.count_window_s) AND m.event_time) AS seen
    FROM matched m WHERE m.count_n IS NOT NULL
    UNION ALL BY NAME
    SELECT m.*, NULL AS seen FROM matched m WHERE m.count_n IS NULL
), ranked AS (
    SELECT *, row_number() OVER (PARTITION BY file, line_no, host ORDER BY priority DESC, rule_id) AS pick
    FROM counted WHERE count_n IS NULL OR seen >= count_n
)
SELECT event_time, host, source, kind, code, event_severity, message, device, reporter, file, line_no,
       rule_id AS rule, cause, domain, rule_severity AS severity, transient, priority, distributed
FROM ranked WHERE pick = 1;
