-- Nodes drained or down at the end of $day, with the state and reason Slurm recorded.
SELECT host, arg_max(state, time_start) AS state, arg_max(reason, time_start) AS reason FROM node_state_periods
WHERE time_start <= $day::TIMESTAMP + INTERVAL 1 DAY
  AND (time_end IS NULL OR time_end > $day::TIMESTAMP + INTERVAL 1 DAY)
  AND (state LIKE '%DRAIN%' OR state LIKE 'DOWN%')
GROUP BY host ORDER BY host
