-- For detector_evaluation: the host attribution blamed for each failed job, from evidence other than
-- telemetry itself (a job whose only blame is goodput's own telemetry alert is left out).
SELECT job_id, instance, host, event_time
FROM failure_attribution
WHERE is_primary AND host IS NOT NULL AND coalesce(source, '') <> 'telemetry'
