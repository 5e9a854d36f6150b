-- staged_jobs: one row per job instance of the jobs in changed_jobs (sql/derive/changed_jobs.sql), from every sacct
-- dump ingested, and the Kubernetes jobs' (staged_k8s_jobs: sql/derive/stage_k8s_jobs.sql); sql/derive/store_jobs.sql
-- puts them in jobs.
-- Nightly dumps overlap (a job running at midnight appears in two), so the
-- same instance is kept once, preferring the record that knows the most: an
-- end time, a final state, the newest file. An instance is a job id plus its
-- start (or, never started, its submit time).
-- Dropped as stale: a PENDING record once the job has another record, and a
-- pending array range (123_[5-9]) once a newer dump shows that array again.
-- The instances are chosen and numbered on narrow rows (each record's rowid and the columns that decide),
-- then the records kept are read whole: windows over the whole records were most of a fresh build's time.
CREATE OR REPLACE TEMP TABLE staged_jobs AS
WITH alloc AS (
    SELECT r.rowid AS record, r.job_id, r.array_job_id, r.array_task_spec, r.state, r.submit_time, r.start_time,
           r.end_time, r.file, r.line_no, f.ingested_at
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
), numbered AS (
    SELECT record, (row_number() OVER (PARTITION BY job_id
                        ORDER BY coalesce(start_time, end_time, submit_time) NULLS LAST, submit_time, start_time, file, line_no) - 1
                   )::INTEGER AS instance
    FROM kept
)
SELECT r.job_id, r.job_id_raw, n.instance,
       r.array_job_id, r.array_task_id, r.array_task_spec, r.het_offset,
       r.user_name, r.account, r.job_name, r.partition, r.qos, r.priority, r.state, r.cancelled_by, r.exit_code,
       r.exit_signal, r.reason, r.submit_time, r.eligible_time, r.start_time, r.end_time, r.elapsed_s, r.n_nodes,
       r.n_gpus, r.nodes, r.node_list, r.restarts, r.submit_line, r.file, r.line_no
FROM numbered n JOIN sacct_records r ON r.rowid = n.record
UNION ALL BY NAME
SELECT * FROM staged_k8s_jobs;
