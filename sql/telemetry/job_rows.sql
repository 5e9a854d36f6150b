-- One job's telemetry (staged by telemetry/stage_telemetry_job_rows.sql): its hosts' samples within its run.
SELECT time, host, metric, value FROM job_telemetry WHERE job_id = $job_id AND instance = $instance
