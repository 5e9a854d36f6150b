INSERT INTO rejects BY NAME SELECT source, file, line_no, raw, reason FROM staged_rejects;
