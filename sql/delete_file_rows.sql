-- Remove everything a file contributed, before it is re-ingested.
DELETE FROM sacct_records WHERE file = $file;
DELETE FROM node_state_periods WHERE file = $file;
DELETE FROM node_events WHERE file = $file;
DELETE FROM benchmark_results WHERE file = $file;
DELETE FROM telemetry WHERE file = $file;
DELETE FROM tickets WHERE file = $file;
DELETE FROM topology WHERE file = $file;
DELETE FROM job_log_lines WHERE file = $file;
DELETE FROM host_addresses WHERE file = $file;
DELETE FROM rejects WHERE file = $file;
