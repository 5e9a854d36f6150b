-- classified_events from $since on (and the events without a time) swapped for those classified again
-- (staged_classified_events); the events before $since keep theirs: nothing they depend on changed.
DELETE FROM classified_events WHERE event_time >= $since OR event_time IS NULL;
INSERT INTO classified_events SELECT * FROM staged_classified_events;
DROP TABLE staged_classified_events;
