-- Infrastructure failures per cause over the days $start to $end (both included; $start NULL: from the first
-- day), the node-days of runtime over those days and the rate per 1,000 node-days: the fleet report's rates.
-- From failure_rate_over_time, the table the cluster report's rolling rate is drawn from, so over the 30 days
-- ending on the report's day a cause's rate here is that day's rolling rate there. days: days of data in the
-- window; first_day: the table's first day (a window starting before it is not full).
WITH d AS (
    SELECT day, cause, failures, node_days FROM failure_rate_over_time
    WHERE day <= $end AND ($start IS NULL OR day >= $start)
), runtime AS (  -- each day's node-days sit on every cause's row of that day: counted once
    SELECT sum(node_days) AS node_days, count(*) AS days
    FROM (SELECT day, any_value(node_days) AS node_days FROM d GROUP BY day)
)
SELECT d.cause, sum(d.failures) AS failures, r.node_days, 1000 * sum(d.failures) / nullif(r.node_days, 0) AS rate,
       r.days, (SELECT min(day)::DATE FROM failure_rate_over_time) AS first_day
FROM d CROSS JOIN runtime r
GROUP BY d.cause, r.node_days, r.days
ORDER BY d.cause
