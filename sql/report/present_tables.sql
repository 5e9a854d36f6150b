-- The tables and views this warehouse holds: a warehouse built by an older goodput (another cluster's, read by the
-- fleet report) may lack the newer ones, and the report leaves out what it cannot read.
SELECT table_name AS name FROM duckdb_tables() WHERE NOT temporary
UNION SELECT view_name FROM duckdb_views() WHERE NOT internal AND NOT temporary
