INSERT INTO node_events BY NAME SELECT * FROM staged_rows;
