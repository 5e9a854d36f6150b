-- Forget what step $step was last built from: its next build starts from scratch.
DELETE FROM derived_marks WHERE step = $step
