-- The events that rule $rule_id matches, its message pattern included. The
-- pattern ($pattern, the rule's m_message) is a parameter: a constant that
-- DuckDB compiles once, never spliced into the statement. It is tried only on
-- events that pass the rule's other fields.
INSERT INTO classify_message_hits
SELECT r.rule_id, e.file, e.line_no, e.host
FROM classify_events_in e JOIN taxonomy_rules r ON r.rule_id = $rule_id
WHERE (r.m_kind IS NULL OR list_contains(r.m_kind, e.kind))
  AND (r.m_source IS NULL OR list_contains(r.m_source, e.source))
  AND (r.m_code IS NULL OR list_contains(r.m_code, e.code))
  AND (r.m_severity IS NULL OR list_contains(r.m_severity, lower(e.severity)))
  AND regexp_matches(e.message, $pattern);
