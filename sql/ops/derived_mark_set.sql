-- Record what step $step was built from (data_through: the newest reading it covered, if it says).
INSERT OR REPLACE INTO derived_marks (step, files, ingested_through, data_through) VALUES ($step, $files, $through, $data_through)
