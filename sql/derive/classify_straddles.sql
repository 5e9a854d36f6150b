-- Whether a line has events on both sides of $since: build_classified_events keeps one winner per line and host
-- (file, line_no, host), so such a line is classified with all its events, every event classified again.
WITH recent AS (
    SELECT DISTINCT file, line_no, host FROM node_events
    WHERE host IS NOT NULL AND (event_time >= $since OR event_time IS NULL)
)
SELECT count(*) > 0 FROM node_events o SEMI JOIN recent n
  ON o.host = n.host AND o.file IS NOT DISTINCT FROM n.file AND o.line_no IS NOT DISTINCT FROM n.line_no
WHERE o.host IS NOT NULL AND o.event_time < $since
