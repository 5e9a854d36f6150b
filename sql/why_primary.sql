SELECT cause, domain, host, rule, event_time, severity, message FROM failure_attribution
WHERE job_id = $job_id AND instance = $instance AND is_primary
