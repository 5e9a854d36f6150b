-- goodput check: the hosts a source's rows name.
SELECT DISTINCT host FROM query_table($table) WHERE host IS NOT NULL
