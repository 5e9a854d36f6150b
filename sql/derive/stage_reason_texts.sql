-- The operator's own words to classify (TEMP, this connection): each distinct text of a Slurm drain/down
-- reason, a repair ticket or a failing health check, once, however many events repeat it (a reason set on
-- 500 nodes, a health check failing every 5 minutes). The reason rules (taxonomy/reasons.yaml) run over
-- these few texts, not over the events (sql/derive/reason_texts_of.sql).
CREATE OR REPLACE TEMP TABLE operator_texts AS
SELECT DISTINCT message AS text FROM node_events
WHERE host IS NOT NULL AND message IS NOT NULL AND trim(message) <> '' AND operator_text(source, severity);
