-- Links between two hosts of a judged job that its per-peer telemetry points at (analysis.telemetry.links).
CREATE TABLE IF NOT EXISTS link_suspects (
    job_id VARCHAR, src_host VARCHAR, dst_host VARCHAR, kind VARCHAR, score DOUBLE, metric VARCHAR, instance INTEGER
);
