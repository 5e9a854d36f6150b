-- GPU-hours lost by size class and kind, for instances that ended by $day.
SELECT bucket_gpus,
       CASE WHEN cause = 'preempted_second_order' THEN 'second-order preemption'
            WHEN cause = 'preempted' THEN 'other preemption'
            WHEN infra THEN 'infrastructure failure' ELSE 'user or other failure' END AS kind,
       sum(lost_gpu_hours) AS lost_gpu_hours, count(*) AS instances
FROM goodput_losses WHERE end_time < $day::TIMESTAMP + INTERVAL 1 DAY
GROUP BY ALL ORDER BY bucket_gpus, kind
