INSERT INTO telemetry BY NAME SELECT * FROM staged_rows;
