-- event_episodes: a flood of the same event (the same rule on the same host, source, kind, code and device:
-- an XID 95 on one GPU every few seconds for hours, a health check failing every 5 minutes) is one episode
-- while its repeats follow each other within 30 minutes: its count, first and last time, and its first line
-- in the operator's or the driver's words. The report and `goodput why` show episodes, not every repeat.
CREATE OR REPLACE VIEW event_episodes AS
WITH ordered AS (
    SELECT host, source, kind, code, device, rule, cause, severity, event_time, message, file, line_no,
           CASE WHEN event_time <= lag(event_time) OVER w + INTERVAL 30 MINUTE THEN 0 ELSE 1 END AS new_episode
    FROM classified_events
    WINDOW w AS (PARTITION BY host, source, kind, code, device, rule ORDER BY event_time, file, line_no)
), numbered AS (
    SELECT *, sum(new_episode) OVER (PARTITION BY host, source, kind, code, device, rule
                                     ORDER BY event_time, file, line_no ROWS UNBOUNDED PRECEDING) AS episode
    FROM ordered
)
SELECT host, source, kind, code, device, rule, any_value(cause) AS cause, any_value(severity) AS severity,
       min(event_time) AS first_time, max(event_time) AS last_time, count(*) AS events,
       first(message ORDER BY event_time, file, line_no) AS message,
       first(file ORDER BY event_time, file, line_no) AS file, first(line_no ORDER BY event_time, file, line_no) AS line_no
FROM numbered
GROUP BY host, source, kind, code, device, rule, episode;
