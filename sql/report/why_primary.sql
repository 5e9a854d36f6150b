SELECT cause, domain, host, link, rule, event_time, severity, message, file, line_no, source, kind, code
FROM failure_attribution
WHERE job_id = $job_id AND instance = $instance AND is_primary
