-- GPU-hours lost per account, partition and week (instances that ended by $day): the per-team trend, priced per
-- partition when goodput.yaml gives prices (reports/cost.py).
SELECT coalesce(j.account, '(none)') AS account, coalesce(j.partition, '(none)') AS partition,
       date_trunc('week', l.end_time)::DATE AS week, sum(l.lost_gpu_hours) AS lost_gpu_hours
FROM goodput_losses l JOIN jobs j USING (job_id, instance)
WHERE l.end_time < $day::TIMESTAMP + INTERVAL 1 DAY
GROUP BY ALL ORDER BY week, account, partition
