SELECT DISTINCT unnest(nodes) AS host FROM sacct_records
