-- failure_attribution: the instances that ended at or after $redo_from swapped for those judged again
-- (staged_failure_attribution); the earlier ones keep theirs: nothing in their windows changed.
DELETE FROM failure_attribution WHERE end_time >= $redo_from;
INSERT INTO failure_attribution SELECT * FROM staged_failure_attribution;
DROP TABLE staged_failure_attribution;
