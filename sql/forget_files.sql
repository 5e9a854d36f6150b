-- `goodput forget`: remove every row, reject and the ingested_files record of
-- the files in staged_files(path). Run in one transaction (sql.run_steps).
DELETE FROM sacct_records WHERE file IN (SELECT path FROM staged_files);
DELETE FROM node_state_periods WHERE file IN (SELECT path FROM staged_files);
DELETE FROM node_events WHERE file IN (SELECT path FROM staged_files);
DELETE FROM benchmark_results WHERE file IN (SELECT path FROM staged_files);
DELETE FROM telemetry WHERE file IN (SELECT path FROM staged_files);
DELETE FROM tickets WHERE file IN (SELECT path FROM staged_files);
DELETE FROM topology WHERE file IN (SELECT path FROM staged_files);
DELETE FROM rejects WHERE file IN (SELECT path FROM staged_files);
DELETE FROM ingested_files WHERE path IN (SELECT path FROM staged_files);
