SELECT count(*) FROM classified_events
