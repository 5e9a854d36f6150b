-- staged_jobs: one row per job instance of the jobs in changed_jobs (sql/derive/changed_jobs.sql), from every sacct
-- dump ingested; sql/derive/store_jobs.sql puts them in jobs.
-- Nightly dumps overlap (a job running at midnight appears in two), so the
-- same instance is kept once, preferring the record that knows the most: an
-- end time, a final state, the newest file. An instance is a job id plus its
-- start (or, never started, its submit time).
-- Dropped as stale: a PENDING record once the job has another record, and a
-- pending array range (123_[5-9]) once a newer dump shows that array again.
CREATE OR REPLACE TEMP TABLE staged_jobs AS
WITH alloc AS (
    SELECT r.*, f.ingested_at
    FROM sacct_records r LEFT JOIN ingested_files f ON f.path = r.file
    WHERE r.step_id IS NULL AND r.job_id IN (SELECT job_id FROM changed_jobs)
), ranked AS (
    SELECT *, row_number() OVER (
        PARTITION BY job_id, start_time, CASE WHEN start_time IS NULL THEN submit_time END
        ORDER BY (end_time IS NULL),
                 (state IN ('RUNNING', 'PENDING', 'SUSPENDED', 'COMPLETING', 'CONFIGURING', 'REQUEUE_HOLD',
                            'REQUEUE_FED', 'RESIZING', 'SIGNALING', 'STAGE_OUT', 'STOPPED')),
                 end_time DESC, ingested_at DESC, file DESC, line_no DESC) AS pick
    FROM alloc
), unique_instances AS (
    SELECT * EXCLUDE (pick) FROM ranked WHERE pick = 1
), kept AS (
    SELECT * FROM unique_instances u
    WHERE NOT (state = 'PENDING' AND start_time IS NULL
               AND EXISTS (SELECT 1 FROM unique_instances o
                           WHERE o.job_id = u.job_id AND (o.start_time IS NOT NULL OR o.state <> 'PENDING')))
      AND NOT (state = 'PENDING' AND array_task_spec IS NOT NULL
               AND EXISTS (SELECT 1 FROM unique_instances o
                           WHERE o.array_job_id = u.array_job_id
                             AND (o.ingested_at > u.ingested_at OR (o.ingested_at = u.ingested_at AND o.file > u.file))))
)
SELECT job_id, job_id_raw,
       (row_number() OVER (PARTITION BY job_id
            ORDER BY coalesce(start_time, end_time, submit_time) NULLS LAST, submit_time, start_time, file, line_no) - 1
       )::INTEGER AS instance,
       array_job_id, array_task_id, array_task_spec, het_offset,
       user_name, account, job_name, partition, qos, priority, state, cancelled_by, exit_code, exit_signal, reason,
       submit_time, eligible_time, start_time, end_time, elapsed_s, n_nodes, n_gpus, nodes, node_list, restarts,
       submit_line, file, line_no
FROM kept;
