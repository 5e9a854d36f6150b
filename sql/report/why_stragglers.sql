-- `goodput why JOB`: the instance's straggler episodes (straggler_episodes), the costliest first.
SELECT host, ranks, start_time, end_time, keys, slowdown, cost_seconds, kind, concurrent, source, origin, why
FROM straggler_episodes WHERE job_id = $job_id AND instance = $instance ORDER BY cost_seconds DESC, start_time, host
