-- goodput check: the first rows a source produced (node_events and telemetry: see check_sample_events,
-- check_sample_counters).
SELECT * EXCLUDE (file) FROM query_table($table) ORDER BY file, line_no LIMIT $n
