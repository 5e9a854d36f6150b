SELECT day, cause, rolling_30d_per_1000_node_days AS rate FROM failure_rate_over_time WHERE day <= $day ORDER BY day, cause
