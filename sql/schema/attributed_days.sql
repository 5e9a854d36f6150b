-- What failure_attribution was last built from, per day: the job instances it judges, by the day they ended
-- (kind 'jobs'), and the classified events, by their day (kind 'events'), with an order-independent digest of
-- each (sql/derive/stage_attributed_days.sql). The next build judges again only the instances whose window
-- reaches the first day that changed (analysis/derive/attribution.py attribute_failures).
CREATE TABLE IF NOT EXISTS attributed_days (kind VARCHAR, day TIMESTAMP, n BIGINT, digest HUGEINT);
