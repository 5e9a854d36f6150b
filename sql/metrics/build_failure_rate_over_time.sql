-- failure_rate_over_time: per day and primary cause (infrastructure causes),
-- failures and the fleet's node-days of runtime that day, with the 30-day
-- rolling rate per 1,000 node-days. health_check_first_seen marks the day each
-- health check first reported, so a new check's "rise" can be read as such.
CREATE OR REPLACE TABLE failure_rate_over_time AS
WITH days AS (
    SELECT day FROM job_days
), runtime AS (
    -- each job on the days its span touches (start < day + 1 day and end > day), one row each (not every day
    -- against every job: that grew with the square of the history)
    SELECT d.day, sum(j.n_nodes * (epoch(least(j.end_time, d.day + INTERVAL 1 DAY)) - epoch(greatest(j.start_time, d.day)))) / 86400.0 AS node_days
    FROM (SELECT n_nodes, start_time, end_time,
                 unnest(generate_series(date_trunc('day', start_time), date_trunc('day', end_time - INTERVAL 1 MICROSECOND),
                                        INTERVAL 1 DAY)) AS on_day
          FROM jobs WHERE start_time IS NOT NULL AND end_time IS NOT NULL) j
    JOIN days d ON d.day = j.on_day
    GROUP BY d.day
), failures AS (
    SELECT date_trunc('day', end_time) AS day, cause, count(*) AS failures
    FROM job_failure_causes WHERE infra_failure GROUP BY ALL
), causes AS (
    SELECT DISTINCT cause FROM failures
), grid AS (
    SELECT d.day, c.cause, coalesce(f.failures, 0) AS failures, coalesce(r.node_days, 0) AS node_days
    FROM days d CROSS JOIN causes c
    LEFT JOIN failures f ON f.day = d.day AND f.cause = c.cause
    LEFT JOIN runtime r ON r.day = d.day
)
SELECT day, cause, failures, node_days,
       1000 * sum(failures) OVER w / nullif(sum(node_days) OVER w, 0) AS rolling_30d_per_1000_node_days
FROM grid
WINDOW w AS (PARTITION BY cause ORDER BY day RANGE BETWEEN INTERVAL 29 DAY PRECEDING AND CURRENT ROW)
ORDER BY day, cause;
-- A check is "introduced" when it reports routinely (has passing results, not
-- only failures) and its first result comes more than a day after the first
-- health result of all: a check that was always there, or one seen only when
-- it fails, is not marked.
CREATE OR REPLACE TABLE health_check_first_seen AS
WITH checks AS (
    SELECT code AS health_check, min(event_time) AS first_seen, count(*) AS results,
           count(*) FILTER (WHERE lower(severity) IN ('ok', 'pass', 'passed', 'info', 'success')) AS passing
    FROM node_events WHERE source = 'health' AND code IS NOT NULL GROUP BY code
)
SELECT health_check, first_seen, results, passing > 0 AS routine,
       passing > 0 AND first_seen > (SELECT min(first_seen) FROM checks) + INTERVAL 1 DAY AS introduced
FROM checks ORDER BY first_seen;
