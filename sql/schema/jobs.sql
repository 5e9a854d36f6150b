-- One row per job instance (a requeued job has several), from every sacct dump ingested (sql/derive/stage_jobs.sql).
CREATE TABLE IF NOT EXISTS jobs (
    job_id VARCHAR, job_id_raw VARCHAR, instance INTEGER, array_job_id BIGINT, array_task_id BIGINT,
    array_task_spec VARCHAR, het_offset INTEGER, user_name VARCHAR, account VARCHAR, job_name VARCHAR,
    partition VARCHAR, qos VARCHAR, priority BIGINT, state VARCHAR, cancelled_by VARCHAR, exit_code INTEGER,
    exit_signal INTEGER, reason VARCHAR, submit_time TIMESTAMP, eligible_time TIMESTAMP, start_time TIMESTAMP,
    end_time TIMESTAMP, elapsed_s BIGINT, n_nodes INTEGER, n_gpus INTEGER, nodes VARCHAR[], node_list VARCHAR,
    restarts INTEGER, submit_line VARCHAR, file VARCHAR, line_no BIGINT
);
-- Added with Kubernetes: the hosts a job's pods excluded (kubernetes.io/hostname NotIn in their required node
-- affinity, sql/derive/stage_k8s_jobs.sql); NULL for Slurm jobs, whose `--exclude` stays in submit_line.
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS excluded_hosts VARCHAR[];
