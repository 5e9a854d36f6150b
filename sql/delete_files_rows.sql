-- Remove everything the files in staged_files(path) contributed, before they are re-ingested.
DELETE FROM sacct_records WHERE file IN (SELECT path FROM staged_files);
DELETE FROM node_state_periods WHERE file IN (SELECT path FROM staged_files);
DELETE FROM node_events WHERE file IN (SELECT path FROM staged_files);
DELETE FROM benchmark_results WHERE file IN (SELECT path FROM staged_files);
DELETE FROM telemetry WHERE file IN (SELECT path FROM staged_files);
DELETE FROM tickets WHERE file IN (SELECT path FROM staged_files);
DELETE FROM topology WHERE file IN (SELECT path FROM staged_files);
DELETE FROM job_log_lines WHERE file IN (SELECT path FROM staged_files);
DELETE FROM host_addresses WHERE file IN (SELECT path FROM staged_files);
DELETE FROM rejects WHERE file IN (SELECT path FROM staged_files);
