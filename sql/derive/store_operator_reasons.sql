-- operator_reasons: every distinct text of a drain/down reason, ticket or failing health check, with the
-- reason rule that classified it (the first in taxonomy/reasons.yaml's order that matches) and its cause;
-- rule NULL: no rule knows it (the view unclassified_reasons). The winners (sql/derive/reason_winners.sql) go to classify_message_hits, so
-- build_classified_events places every event with that text under its rule.
INSERT INTO classify_message_hits
SELECT w.rule_id, e.rowid FROM node_events e JOIN reason_winners w ON e.message = w.text
WHERE e.host IS NOT NULL AND ($scan_from IS NULL OR e.event_time >= $scan_from OR e.event_time IS NULL)
  AND operator_text(e.source, e.severity);
CREATE OR REPLACE TABLE operator_reasons AS
SELECT e.source, e.message AS text, w.rule_id AS rule, r.cause, count(*) AS events, count(DISTINCT e.host) AS hosts,
       min(e.event_time) AS first_seen, max(e.event_time) AS last_seen,
       list(DISTINCT e.host ORDER BY e.host)[1:5] AS example_hosts
FROM node_events e JOIN reason_texts t ON e.message = t.text
LEFT JOIN reason_winners w ON w.text = e.message
LEFT JOIN taxonomy_rules r ON r.rule_id = w.rule_id
WHERE e.host IS NOT NULL
  AND operator_text(e.source, e.severity)
GROUP BY e.source, e.message, w.rule_id, r.cause
ORDER BY rule IS NOT NULL, events DESC, text;
CREATE OR REPLACE VIEW unclassified_reasons AS
SELECT source, text, events, hosts, first_seen, last_seen, example_hosts FROM operator_reasons WHERE rule IS NULL;
DROP TABLE temp.reason_hits;
DROP TABLE temp.reason_winners;
DROP TABLE temp.reason_texts;
DROP TABLE temp.operator_texts;
