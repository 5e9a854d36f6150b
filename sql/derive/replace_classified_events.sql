-- classified_events: every event classified (staged_classified_events over all node events), the table replaced.
CREATE OR REPLACE TABLE classified_events AS SELECT * FROM staged_classified_events;
DROP TABLE staged_classified_events;
