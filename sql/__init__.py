"""goodput's DuckDB statements, one .sql file each: package data, read through analysis.resources."""
