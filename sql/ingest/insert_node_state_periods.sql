INSERT INTO node_state_periods BY NAME SELECT * FROM staged_rows;
