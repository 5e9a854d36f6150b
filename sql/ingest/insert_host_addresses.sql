INSERT INTO host_addresses BY NAME SELECT * FROM staged_rows;
