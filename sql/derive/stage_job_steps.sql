-- staged_job_steps: steps of the job instances in staged_jobs (the jobs of changed_jobs). A step belongs to
-- the instance of its job that had started most recently when the step started (requeued instances share
-- the job id).
CREATE OR REPLACE TEMP TABLE staged_job_steps AS
-- The record kept for each step is chosen on narrow rows (its rowid and what orders it), then read whole: the
-- window over the whole records was most of a fresh build's time.
WITH picked AS (
    SELECT rowid AS record FROM sacct_records
    WHERE step_id IS NOT NULL AND job_id IN (SELECT job_id FROM changed_jobs)
    QUALIFY row_number() OVER (PARTITION BY job_id, step_id, start_time
                               ORDER BY (end_time IS NULL), end_time DESC, file DESC, line_no DESC) = 1
), steps AS (
    SELECT * FROM sacct_records WHERE rowid IN (SELECT record FROM picked)
)
SELECT s.job_id, s.job_id_raw, coalesce(j.instance, 0) AS instance, s.step_id, s.job_name AS step_name,
       s.state, s.cancelled_by, s.exit_code, s.exit_signal, s.start_time, s.end_time, s.elapsed_s,
       s.n_nodes, s.n_gpus, s.nodes, s.node_list, s.file, s.line_no
FROM steps s
ASOF LEFT JOIN staged_jobs j ON s.job_id = j.job_id AND s.start_time >= j.start_time;
