INSERT INTO topology BY NAME SELECT * FROM staged_rows;
