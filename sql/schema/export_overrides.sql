-- export_overrides: every `goodput export --force` past the drain limit (max_drain_share / max_drain_floor), who
-- forced it (the OS user) and why, kept (analysis/nodes/exports.py record_override; docs/node-exports.md).
CREATE TABLE IF NOT EXISTS export_overrides (
    forced_at TIMESTAMP, os_user VARCHAR, why VARCHAR, drains INTEGER, drain_limit INTEGER, fleet INTEGER,
    as_of TIMESTAMP, platform VARCHAR, out_dir VARCHAR
);
