-- GPU-hours lost per account and partition (instances that ended by $day), split as the capacity is:
-- infrastructure failures, second-order preemptions, the account's own failures, other preemptions.
SELECT coalesce(j.account, '(none)') AS account, coalesce(j.partition, '(none)') AS partition,
       sum(l.lost_gpu_hours) FILTER (WHERE l.infra) AS infrastructure,
       sum(l.lost_gpu_hours) FILTER (WHERE l.cause = 'preempted_second_order') AS second_order,
       sum(l.lost_gpu_hours) FILTER (WHERE NOT l.infra AND l.cause NOT LIKE 'preempted%') AS own_failures,
       sum(l.lost_gpu_hours) FILTER (WHERE l.cause = 'preempted') AS preemptions,
       sum(l.lost_gpu_hours) AS lost_gpu_hours
FROM goodput_losses l JOIN jobs j USING (job_id, instance)
WHERE l.end_time < $day::TIMESTAMP + INTERVAL 1 DAY
GROUP BY ALL ORDER BY lost_gpu_hours DESC, account, partition LIMIT 12
