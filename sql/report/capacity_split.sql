-- Where each day's GPU capacity went (up to $day), as GPU-hours and shares that add up to the capacity:
-- productive work, work lost to infrastructure failures, to the users' own failures, to preemptions
-- (first-order), to second-order preemptions (those a failure's requeue caused) and waiting for stragglers,
-- and idle (not scheduled). Reliability work can win back the infrastructure and second-order shares.
WITH d AS (
    SELECT day, capacity_gpu_hours::DOUBLE AS capacity, productive_gpu_hours AS productive,
           lost_infra_failure_gpu_hours AS infrastructure,
           lost_failure_gpu_hours - lost_infra_failure_gpu_hours AS user_failures,
           lost_preemption_gpu_hours - lost_second_order_gpu_hours AS preemptions,
           lost_second_order_gpu_hours AS second_order, lost_straggler_gpu_hours AS stragglers,
           greatest(capacity_gpu_hours - scheduled_gpu_hours, 0) AS idle
    FROM goodput_daily WHERE day <= $day
)
-- scheduled time above capacity (nodes counted from what the logs name) is not idle: productive absorbs it
SELECT day, capacity, productive - greatest(productive + infrastructure + user_failures + preemptions + second_order
                                            + stragglers + idle - capacity, 0) AS productive,
       infrastructure, user_failures, preemptions, second_order, stragglers, idle
FROM d ORDER BY day
