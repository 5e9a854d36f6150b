-- The node events (with a host) that rule $rule_id matches, its message pattern included. The rule's
-- fields come as parameters, constants to DuckDB: the pattern ($pattern, the rule's m_message) is
-- compiled once, never spliced into the statement, and the other fields ($kinds, $sources, $codes,
-- $severities: NULL for any) filter the scan before any message is read (joined from taxonomy_rules
-- they were checked row by row, the pattern tried on every message). Copies (classify_dropped) are
-- left out by build_classified_events. Only the events from $scan_from on (NULL: all).
INSERT INTO classify_message_hits
SELECT $rule_id, rowid FROM node_events
WHERE host IS NOT NULL AND ($scan_from IS NULL OR event_time >= $scan_from OR event_time IS NULL)
  AND ($kinds IS NULL OR list_contains($kinds, kind))
  AND ($sources IS NULL OR list_contains($sources, source))
  AND ($codes IS NULL OR list_contains($codes, code))
  AND ($severities IS NULL OR list_contains($severities, lower(severity)))
  AND regexp_matches(message, $pattern);
