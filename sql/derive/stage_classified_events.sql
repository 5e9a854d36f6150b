-- Inputs of build_classified_events, in this connection only (TEMP), by node_events rowid: the statements
-- of one build run in one transaction, where a row keeps its rowid. Only narrow rows are staged: the
-- messages stay in node_events until the winners are joined back (a staged copy of 2.7 M events with
-- their messages spilled to disk).
-- classify_dropped: node events with a host that copy an event kept elsewhere. The same lines exported
-- in two files (two kernel log exports) are one event, so a counting rule never fires on copies; a line
-- repeated within one file (the same message twice in the same second) stays two events: the n-th copy
-- in each file is the same event, kept from the first file. Only events whose key hashes alike in
-- several files go through the (slower) exact comparison.
-- Only the events from $scan_from on (NULL: all) are staged (analysis/derive/attribution.py classify_events):
-- copies share their time, so none straddles it.
CREATE OR REPLACE TEMP TABLE classify_dropped AS
WITH keyed AS (
    SELECT rowid AS event_row, file, hash(host, event_time, source, reporter, message) AS event_key
    FROM node_events WHERE host IS NOT NULL AND ($scan_from IS NULL OR event_time >= $scan_from OR event_time IS NULL)
), in_several_files AS (
    SELECT event_key FROM keyed GROUP BY event_key HAVING count(DISTINCT file) > 1
), copies AS (
    SELECT e.rowid AS event_row, e.host, e.event_time, e.source, e.reporter, e.message, e.file, e.line_no,
           row_number() OVER (PARTITION BY e.host, e.event_time, e.source, e.reporter, e.message, e.file
                              ORDER BY e.line_no) AS occurrence
    FROM node_events e JOIN (SELECT event_row FROM keyed SEMI JOIN in_several_files USING (event_key)) k
      ON e.rowid = k.event_row
)
SELECT event_row FROM copies
QUALIFY row_number() OVER (PARTITION BY host, event_time, source, reporter, message, occurrence ORDER BY file, line_no) > 1;
-- classify_message_hits: the events each message-pattern rule matches (filled
-- by match_rule_message, one statement per rule, so each pattern is compiled once).
CREATE OR REPLACE TEMP TABLE classify_message_hits (rule_id VARCHAR, event_row BIGINT);
