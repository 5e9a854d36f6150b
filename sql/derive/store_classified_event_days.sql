-- classified_event_days: the days of node events this build classified (event_days_now).
DELETE FROM classified_event_days;
INSERT INTO classified_event_days SELECT * FROM event_days_now ORDER BY day;
DROP TABLE event_days_now;
