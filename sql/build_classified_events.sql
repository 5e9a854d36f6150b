-- classified_events: each node event that a taxonomy rule explains, with the
-- winning rule (highest priority) among those that match it. Reads the events
-- and message-rule hits staged by stage_classified_events / match_rule_message.
-- Rules naming a kind join on it (a hash join); the few without one are
-- checked against every event; rules with a message pattern come matched.
CREATE OR REPLACE TABLE classified_events AS
WITH events AS (
    SELECT * RENAME (severity AS event_severity) FROM classify_events_in
), rules AS (
    SELECT * RENAME (severity AS rule_severity) FROM taxonomy_rules
), matched AS (
    SELECT e.*, r.* FROM events e
    JOIN (SELECT *, unnest(m_kind) AS rule_kind FROM rules WHERE m_kind IS NOT NULL AND m_message IS NULL) r
      ON e.kind = r.rule_kind
    WHERE (r.m_source IS NULL OR list_contains(r.m_source, e.source))
      AND (r.m_code IS NULL OR list_contains(r.m_code, e.code))
      AND (r.m_severity IS NULL OR list_contains(r.m_severity, lower(e.event_severity)))
    UNION ALL BY NAME
    SELECT e.*, r.* FROM events e, rules r
    WHERE r.m_kind IS NULL AND r.m_message IS NULL
      AND (r.m_source IS NULL OR list_contains(r.m_source, e.source))
      AND (r.m_code IS NULL OR list_contains(r.m_code, e.code))
      AND (r.m_severity IS NULL OR list_contains(r.m_severity, lower(e.event_severity)))
    UNION ALL BY NAME
    SELECT e.*, r.* FROM classify_message_hits h
    JOIN events e ON e.file = h.file AND e.line_no = h.line_no AND e.host = h.host
    JOIN rules r ON r.rule_id = h.rule_id
), counted AS (
    -- a counting rule fires once it has seen count_n events on the host (or device) within its window
    SELECT *, CASE WHEN event_time IS NOT NULL THEN count(*) OVER (
                  PARTITION BY rule_id, host, CASE WHEN count_per = 'device' THEN device END ORDER BY event_time
                  RANGE BETWEEN to_seconds(count_window_s) PRECEDING AND CURRENT ROW) ELSE 0 END AS seen
    FROM matched WHERE count_n IS NOT NULL
    UNION ALL BY NAME
    SELECT *, NULL AS seen FROM matched WHERE count_n IS NULL
), ranked AS (
    SELECT *, row_number() OVER (PARTITION BY file, line_no, host ORDER BY priority DESC, rule_id) AS pick
    FROM counted WHERE count_n IS NULL OR seen >= count_n
)
SELECT event_time, host, source, kind, code, event_severity, message, device, reporter, file, line_no, job_id, peer,
       rule_id AS rule, cause, domain, rule_severity AS severity, transient, priority, distributed
FROM ranked WHERE pick = 1;
DROP TABLE temp.classify_message_hits;
DROP TABLE temp.classify_events_in;
