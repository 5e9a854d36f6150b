SELECT sum(productive_gpu_hours) / sum(capacity_gpu_hours) AS goodput,
       sum(lost_failure_gpu_hours) AS lost_failure_gpu_hours, sum(lost_preemption_gpu_hours) AS lost_preemption_gpu_hours,
       sum(lost_second_order_gpu_hours) AS lost_second_order_gpu_hours,
       -- Meta: second-order preemptions as a share of what failures cost (the
       -- infrastructure failures themselves plus the preemptions they caused)
       sum(lost_second_order_gpu_hours) / nullif(sum(lost_infra_failure_gpu_hours) + sum(lost_second_order_gpu_hours), 0)
           AS second_order_share_of_loss,
       (SELECT count(*) FROM second_order_preemptions) AS second_order_preemptions
FROM goodput_daily
