CREATE OR REPLACE TABLE mttf_by_job_size AS SELECT * FROM staged_mttf;
CREATE OR REPLACE TABLE mttf_projection AS SELECT * FROM staged_projection;
