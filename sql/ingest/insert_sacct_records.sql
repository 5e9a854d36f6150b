INSERT INTO sacct_records BY NAME SELECT * FROM staged_rows;
