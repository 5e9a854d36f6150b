SELECT bucket_gpus,
       CASE WHEN cause = 'preempted_second_order' THEN 'second-order preemption'
            WHEN cause = 'preempted' THEN 'other preemption'
            WHEN domain = 'user' THEN 'user failure' ELSE 'infrastructure failure' END AS kind,
       sum(lost_gpu_hours) AS lost_gpu_hours, count(*) AS instances
FROM goodput_losses l LEFT JOIN (SELECT DISTINCT cause AS c, domain FROM failure_attribution) d ON d.c = l.cause
GROUP BY ALL ORDER BY bucket_gpus, kind
