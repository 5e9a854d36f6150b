-- staged_job_steps: steps of the job instances in staged_jobs (the jobs of changed_jobs). A step belongs to
-- the instance of its job that had started most recently when the step started (requeued instances share
-- the job id).
CREATE OR REPLACE TEMP TABLE staged_job_steps AS
WITH steps AS (
    SELECT * FROM (
        SELECT r.*, row_number() OVER (
            PARTITION BY job_id, step_id, start_time
            ORDER BY (end_time IS NULL), end_time DESC, file DESC, line_no DESC) AS pick
        FROM sacct_records r WHERE r.step_id IS NOT NULL AND r.job_id IN (SELECT job_id FROM changed_jobs))
    WHERE pick = 1
)
SELECT s.job_id, s.job_id_raw, coalesce(j.instance, 0) AS instance, s.step_id, s.job_name AS step_name,
       s.state, s.cancelled_by, s.exit_code, s.exit_signal, s.start_time, s.end_time, s.elapsed_s,
       s.n_nodes, s.n_gpus, s.nodes, s.node_list, s.file, s.line_no
FROM steps s
ASOF LEFT JOIN staged_jobs j ON s.job_id = j.job_id AND s.start_time >= j.start_time;
