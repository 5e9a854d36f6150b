-- What classified_events was last built from, per day of event time: the node events with a host that day and a
-- digest of them (sql/derive/stage_classified_event_days.sql). The next build classifies again only from the
-- first day whose events differ (analysis/derive/attribution.py classify_events).
CREATE TABLE IF NOT EXISTS classified_event_days (day TIMESTAMP, events BIGINT, digest HUGEINT);
