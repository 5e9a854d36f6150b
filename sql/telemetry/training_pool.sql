-- The covered jobs a detector trained on data up to $data_to chose its training and labelled jobs from
-- (analysis.telemetry.run.rank_metrics): telemetry_jobs holds every covered job once machine_alerts ran,
-- in the order of sql/telemetry/jobs.sql.
SELECT * EXCLUDE (model_version, metrics) FROM telemetry_jobs
WHERE end_time <= $data_to
ORDER BY start_time, job_id, instance
