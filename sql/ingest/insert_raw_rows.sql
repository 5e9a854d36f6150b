-- A file's rows for one raw table of the source registry (analysis/warehouse.py names it).
INSERT INTO {raw_table} BY NAME SELECT * FROM staged_rows;
