-- goodput check: the first node events a source (kernel, switch, health) produced.
SELECT * EXCLUDE (file) FROM node_events WHERE source = $kind_source ORDER BY file, line_no LIMIT $n
