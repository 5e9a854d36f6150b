-- Per job staged by telemetry/stage_telemetry_job_rows.sql, the machine-level metrics (per-peer `<name>@<peer>`
-- ones are the links' business) with a usable value: what analysis/telemetry/frames.py keeps (a
-- finite, non-negative number at a known time). The detector's metric set is checked against them.
SELECT job_id, instance, list(DISTINCT metric ORDER BY metric) AS metrics
FROM job_telemetry
WHERE NOT contains(metric, '@') AND isfinite(value) AND value >= 0 AND time IS NOT NULL
GROUP BY job_id, instance
