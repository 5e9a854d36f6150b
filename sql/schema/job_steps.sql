-- One row per step of a job instance (sql/derive/stage_job_steps.sql).
CREATE TABLE IF NOT EXISTS job_steps (
    job_id VARCHAR, job_id_raw VARCHAR, instance INTEGER, step_id VARCHAR, step_name VARCHAR, state VARCHAR,
    cancelled_by VARCHAR, exit_code INTEGER, exit_signal INTEGER, start_time TIMESTAMP, end_time TIMESTAMP,
    elapsed_s BIGINT, n_nodes INTEGER, n_gpus INTEGER, nodes VARCHAR[], node_list VARCHAR, file VARCHAR, line_no BIGINT
);
