-- The warehouse's GPU capacity, productive work and losses over all its days, in GPU-seconds (Prometheus' base
-- unit), the losses in the report's disjoint buckets (sql/report/capacity_split.sql): infrastructure failures,
-- the users' own failures, first-order and second-order preemptions, waiting for stragglers.
SELECT coalesce(sum(capacity_gpu_hours), 0) * 3600 AS capacity,
       coalesce(sum(productive_gpu_hours), 0) * 3600 AS productive,
       coalesce(sum(lost_infra_failure_gpu_hours), 0) * 3600 AS infrastructure_failures,
       coalesce(sum(lost_failure_gpu_hours - lost_infra_failure_gpu_hours), 0) * 3600 AS user_failures,
       coalesce(sum(lost_preemption_gpu_hours - lost_second_order_gpu_hours), 0) * 3600 AS preemptions,
       coalesce(sum(lost_second_order_gpu_hours), 0) * 3600 AS second_order_preemptions,
       coalesce(sum(lost_straggler_gpu_hours), 0) * 3600 AS stragglers
FROM goodput_daily
