-- Each instance of a job, and whether it is a failure (job_failure_causes.is_failure: the one definition the
-- crash loops and job_run_ettr.failures count) or a requeue for maintenance (maintenance_requeues).
SELECT j.job_id, j.instance, j.state, j.start_time, j.end_time, j.nodes,
       coalesce(f.is_failure, FALSE) AS is_failure, m.job_id IS NOT NULL AS maintenance
FROM jobs j LEFT JOIN job_failure_causes f USING (job_id, instance) LEFT JOIN maintenance_requeues m USING (job_id, instance)
WHERE j.job_id = $job_id ORDER BY j.instance
