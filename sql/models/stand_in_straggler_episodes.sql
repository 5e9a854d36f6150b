-- An empty stand-in (TEMP, this connection) for straggler_episodes on a warehouse whose straggler step has not
-- run since it was added (sql/derive/store_straggler_episodes.sql makes the real one): goodput and the node
-- actions read it.
CREATE TEMP TABLE straggler_episodes (
    job_id VARCHAR, instance BIGINT, host VARCHAR, ranks BIGINT[], start_time TIMESTAMP, end_time TIMESTAMP,
    keys BIGINT, slowdown DOUBLE, cost_seconds DOUBLE, kind VARCHAR, concurrent BIGINT, source VARCHAR,
    position BIGINT, origin VARCHAR, basis VARCHAR, why VARCHAR);
