-- The 30-day rolling failure rate per cause up to $day; NULL (not drawn) until 30 days of data have
-- accumulated: a rate over a window that is not full yet overstates or understates. failures: that
-- day's infrastructure failures of the cause (what the report says in words while the rate is not drawn).
SELECT day, cause, failures,
       CASE WHEN day >= (SELECT min(day) FROM failure_rate_over_time) + INTERVAL 29 DAY
            THEN rolling_30d_per_1000_node_days END AS rate
FROM failure_rate_over_time WHERE day <= $day ORDER BY day, cause
