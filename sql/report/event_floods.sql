-- The largest floods of one event (event_episodes: the same rule on the same host, source, kind, code and device,
-- repeats within 30 minutes) of $min_events repeats or more that began by the end of $day, the largest $limit;
-- floods and flood_events: all of them, before the limit. The first line is cut to 300 characters.
-- The episodes are those of the view event_episodes (sql/derive/view_event_episodes.sql, the same statement),
-- found only for the events whose key repeats $min_events times or more in all: an episode of that many lies
-- within one such key, and the window over every classified event was most of the report's time.
WITH flooding AS (
    SELECT host, source, kind, code, device, rule FROM classified_events
    GROUP BY ALL HAVING count(*) >= $min_events
), keyed AS (
    SELECT c.host, c.source, c.kind, c.code, c.device, c.rule, c.event_time, c.file, c.line_no
    FROM classified_events c JOIN flooding f
      ON c.host = f.host AND c.rule = f.rule AND c.source IS NOT DISTINCT FROM f.source
     AND c.kind IS NOT DISTINCT FROM f.kind AND c.code IS NOT DISTINCT FROM f.code
     AND c.device IS NOT DISTINCT FROM f.device
), ordered AS (
    SELECT *, CASE WHEN event_time <= lag(event_time) OVER w + INTERVAL 30 MINUTE THEN 0 ELSE 1 END AS new_episode
    FROM keyed
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
    HAVING count(*) >= $min_events AND min(event_time) < $day::TIMESTAMP + INTERVAL 1 DAY
), e AS (
    SELECT p.host, p.source, p.kind, p.code, p.device, p.rule, c.cause, c.severity, p.first_time, p.last_time, p.events,
           c.message, c.file, c.line_no
    FROM episodes p JOIN classified_events c
      ON c.host = p.host AND c.file IS NOT DISTINCT FROM p.first_file AND c.line_no IS NOT DISTINCT FROM p.first_line
     AND c.rule = p.rule
)
SELECT e.host, e.source, e.kind, e.code, e.device, e.rule, e.cause, coalesce(c.label, e.cause) AS label, e.severity,
       e.events, e.first_time, e.last_time, left(e.message, 300) AS message, e.file, e.line_no,
       count(*) OVER () AS floods, (sum(e.events) OVER ())::BIGINT AS flood_events
FROM e LEFT JOIN taxonomy_causes c USING (cause)
ORDER BY e.events DESC, e.first_time, e.host
LIMIT $limit
