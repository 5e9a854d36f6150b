-- Record what step $step was built from.
INSERT OR REPLACE INTO derived_marks VALUES ($step, $files, $through)
