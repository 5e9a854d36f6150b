-- Which ranks each single-value benchmark metric is reported for (-1: no rank), for baseline.json.
SELECT DISTINCT benchmark, CASE WHEN size_bytes IS NULL THEN metric ELSE metric || '@' || size_bytes END AS metric,
       coalesce(rank, -1) AS rank
FROM benchmark_results WHERE sample_idx IS NULL AND NOT contains(host, ',')
