-- The latest benchmark criteria: one row per status (ok, loose, noisy, ...), with the training window.
SELECT version, min(trained_from) AS trained_from, max(trained_to) AS trained_to, max(n_hosts) AS fleet,
       status, count(*) AS metrics, count(*) FILTER (WHERE guessed_direction) AS guessed,
       list(benchmark || '/' || metric ORDER BY benchmark, metric) FILTER (WHERE guessed_direction) AS guessed_metrics
FROM benchmark_criteria
WHERE version = (SELECT version FROM benchmark_criteria ORDER BY trained_to DESC, version DESC LIMIT 1)
GROUP BY version, status ORDER BY status
