INSERT INTO tickets BY NAME SELECT * FROM staged_rows;
