-- One `goodput export --force --why TEXT` past the drain limit (analysis/nodes/exports.py record_override).
INSERT INTO export_overrides (forced_at, os_user, why, drains, drain_limit, fleet, as_of, platform, out_dir)
VALUES ($forced_at, $os_user, $why, $drains, $drain_limit, $fleet, $as_of, $platform, $out_dir);
