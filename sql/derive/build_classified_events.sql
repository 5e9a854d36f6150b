-- classified_events: each node event that a taxonomy rule explains, with the
-- winning rule (highest priority) among those that match it. Reads the copies and
-- message-rule hits staged by stage_classified_events / match_rule_message.
-- Rules naming a kind join on it (and on the code, when they name codes: a hash join); the few without one are
-- checked against every event; rules with a message pattern come matched.
-- Matching and ranking run on narrow rows (the event's rowid and the fields rules look at); the
-- winners take their messages and the rest from node_events at the end.
-- Staged (TEMP) for the events from $since on (NULL: all; and those without a time), matched among those from
-- $scan_from on: $since less the longest counting window, so a counting rule sees every event it counts.
-- replace_classified_events / store_classified_events write classified_events.
CREATE OR REPLACE TEMP TABLE staged_classified_events AS
WITH events AS (
    SELECT rowid AS event_row, event_time, host, source, kind, code, severity, device, file, line_no
    FROM node_events
    WHERE host IS NOT NULL AND rowid NOT IN (SELECT event_row FROM classify_dropped)
      AND ($scan_from IS NULL OR event_time >= $scan_from OR event_time IS NULL)
), rules AS (
    SELECT rule_id, priority, count_n, count_window_s, count_per, m_kind, m_message, m_source, m_code, m_severity
    FROM taxonomy_rules
), matched AS (
    SELECT e.event_row, e.event_time, e.host, e.device, e.file, e.line_no,
           r.rule_id, r.priority, r.count_n, r.count_window_s, r.count_per
    FROM events e
    JOIN (SELECT *, unnest(m_kind) AS rule_kind FROM rules WHERE m_kind IS NOT NULL AND m_message IS NULL
                                                             AND m_code IS NULL) r
      ON e.kind = r.rule_kind
    WHERE (r.m_source IS NULL OR list_contains(r.m_source, e.source))
      AND (r.m_severity IS NULL OR list_contains(r.m_severity, lower(e.severity)))
    UNION ALL
    -- rules naming codes as well (the XIDs) join on both: on the kind alone each XID met every XID rule
    SELECT e.event_row, e.event_time, e.host, e.device, e.file, e.line_no,
           r.rule_id, r.priority, r.count_n, r.count_window_s, r.count_per
    FROM events e
    JOIN (SELECT *, unnest(list_distinct(m_code)) AS rule_code
          FROM (SELECT *, unnest(m_kind) AS rule_kind FROM rules
                WHERE m_kind IS NOT NULL AND m_message IS NULL AND m_code IS NOT NULL)) r
      ON e.kind = r.rule_kind AND e.code = r.rule_code
    WHERE (r.m_source IS NULL OR list_contains(r.m_source, e.source))
      AND (r.m_severity IS NULL OR list_contains(r.m_severity, lower(e.severity)))
    UNION ALL
    SELECT e.event_row, e.event_time, e.host, e.device, e.file, e.line_no,
           r.rule_id, r.priority, r.count_n, r.count_window_s, r.count_per
    FROM events e, rules r
    WHERE r.m_kind IS NULL AND r.m_message IS NULL
      AND (r.m_source IS NULL OR list_contains(r.m_source, e.source))
      AND (r.m_code IS NULL OR list_contains(r.m_code, e.code))
      AND (r.m_severity IS NULL OR list_contains(r.m_severity, lower(e.severity)))
    UNION ALL
    SELECT e.event_row, e.event_time, e.host, e.device, e.file, e.line_no,
           r.rule_id, r.priority, r.count_n, r.count_window_s, r.count_per
    FROM classify_message_hits h
    JOIN events e ON e.event_row = h.event_row
    JOIN rules r ON r.rule_id = h.rule_id
), counted AS (
    -- a counting rule fires once it has seen count_n events on the host (or device) within its window
    SELECT *, CASE WHEN event_time IS NOT NULL THEN count(*) OVER (
                  PARTITION BY rule_id, host, CASE WHEN count_per = 'device' THEN device END ORDER BY event_time
                  RANGE BETWEEN to_seconds(count_window_s) PRECEDING AND CURRENT ROW) ELSE 0 END AS seen
    FROM matched WHERE count_n IS NOT NULL
    UNION ALL BY NAME
    SELECT *, NULL AS seen FROM matched WHERE count_n IS NULL
), winners AS (
    SELECT event_row, rule_id FROM counted WHERE count_n IS NULL OR seen >= count_n
    QUALIFY row_number() OVER (PARTITION BY file, line_no, host ORDER BY priority DESC, rule_id) = 1
)
SELECT e.event_time, e.host, e.source, e.kind, e.code, e.severity AS event_severity, e.message, e.device,
       e.reporter, e.file, e.line_no, e.job_id, e.peer,
       r.rule_id AS rule, r.cause, r.domain, r.severity, r.transient, r.priority, r.distributed
FROM winners w JOIN node_events e ON e.rowid = w.event_row JOIN taxonomy_rules r ON r.rule_id = w.rule_id
WHERE $since IS NULL OR e.event_time >= $since OR e.event_time IS NULL;
DROP TABLE temp.classify_message_hits;
DROP TABLE temp.classify_dropped;
