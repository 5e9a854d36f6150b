-- event_episodes: a flood of the same event (the same rule on the same host, source, kind, code and device:
-- an XID 95 on one GPU every few seconds for hours, a health check failing every 5 minutes) is one episode
-- while its repeats follow each other within 30 minutes: its count, first and last time, and its first line
-- in the operator's or the driver's words. The report and `goodput why` show episodes, not every repeat.
-- The episodes are found on the key columns and each event's line only; the first line's message is joined
-- back at the end (sorting the messages of a million-line flood doubled the memory: bench/flood.py). A line
-- (file, line_no) is one classified event per host. No rowid: the fleet reads this view over its own union of
-- every cluster's classified_events, which has none.
CREATE OR REPLACE VIEW event_episodes AS
WITH ordered AS (
    SELECT host, source, kind, code, device, rule, event_time, file, line_no,
           CASE WHEN event_time <= lag(event_time) OVER w + INTERVAL 30 MINUTE THEN 0 ELSE 1 END AS new_episode
    FROM classified_events
    WINDOW w AS (PARTITION BY host, source, kind, code, device, rule ORDER BY event_time, file, line_no)
), numbered AS (
    SELECT *, sum(new_episode) OVER (PARTITION BY host, source, kind, code, device, rule
                                     ORDER BY event_time, file, line_no ROWS UNBOUNDED PRECEDING) AS episode
    FROM ordered
), episodes AS (
    SELECT host, source, kind, code, device, rule, min(event_time) AS first_time, max(event_time) AS last_time,
           count(*) AS events, first(file ORDER BY event_time, file, line_no) AS first_file,
           first(line_no ORDER BY event_time, file, line_no) AS first_line
    FROM numbered
    GROUP BY host, source, kind, code, device, rule, episode
)
SELECT p.host, p.source, p.kind, p.code, p.device, p.rule, c.cause, c.severity, p.first_time, p.last_time, p.events,
       c.message, c.file, c.line_no
FROM episodes p JOIN classified_events c
  ON c.host = p.host AND c.file IS NOT DISTINCT FROM p.first_file AND c.line_no IS NOT DISTINCT FROM p.first_line
 AND c.rule = p.rule;
