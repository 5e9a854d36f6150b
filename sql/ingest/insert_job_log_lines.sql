INSERT INTO job_log_lines BY NAME SELECT * FROM staged_rows;
