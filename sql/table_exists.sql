SELECT count(*) > 0 FROM duckdb_tables() WHERE table_name = ? AND NOT temporary
