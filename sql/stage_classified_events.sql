-- Inputs of build_classified_events, in this connection only (TEMP).
-- classify_events_in: node events with a host, each real event once. The same
-- lines exported in two files (two kernel log exports) are one event, so a
-- counting rule never fires on copies; a line repeated within one file (the
-- same message twice in the same second) stays two events: the n-th copy in
-- each file is the same event, kept from the first file. Only events whose key
-- hashes alike in several files go through the (slower) exact comparison.
CREATE OR REPLACE TEMP TABLE classify_events_in AS
WITH keyed AS (
    SELECT *, hash(host, event_time, source, reporter, message) AS event_key FROM node_events WHERE host IS NOT NULL
), in_several_files AS (
    SELECT event_key FROM keyed GROUP BY event_key HAVING count(DISTINCT file) > 1
), copies AS (
    SELECT *, row_number() OVER (PARTITION BY host, event_time, source, reporter, message, file ORDER BY line_no) AS occurrence
    FROM keyed SEMI JOIN in_several_files USING (event_key)
)
SELECT * EXCLUDE (event_key) FROM keyed ANTI JOIN in_several_files USING (event_key)
UNION ALL
SELECT * EXCLUDE (event_key, occurrence) FROM copies
QUALIFY row_number() OVER (PARTITION BY host, event_time, source, reporter, message, occurrence ORDER BY file, line_no) = 1;
-- classify_message_hits: the events each message-pattern rule matches (filled
-- by match_rule_message, one statement per rule, so each pattern is compiled once).
CREATE OR REPLACE TEMP TABLE classify_message_hits (rule_id VARCHAR, file VARCHAR, line_no BIGINT, host VARCHAR);
