-- The failures (ended by $day) that lost the most GPU-hours: goodput_losses.lost_gpu_hours, min(runtime, Δt/2)
-- x GPUs, as the headline's card and the capacity split count them; equal losses, the longer run first.
-- Job names are user text, escaped by the template.
SELECT f.job_id, f.instance, f.job_name, f.user_name, f.n_gpus, f.state, f.cause, f.domain, f.host,
       l.lost_gpu_hours, l.infra
FROM goodput_losses l JOIN job_failure_causes f USING (job_id, instance)
WHERE l.cause NOT LIKE 'preempted%' AND l.end_time < $day::TIMESTAMP + INTERVAL 1 DAY
ORDER BY l.lost_gpu_hours DESC, f.n_gpus * coalesce(f.elapsed_s, 0) DESC, f.job_id, f.instance LIMIT 12
