INSERT INTO benchmark_results BY NAME SELECT * FROM staged_rows;
