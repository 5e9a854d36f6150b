-- event_days_now (TEMP): per day of event time (NULL: the events without a time), the node events with a host
-- and an order-independent digest of every column (a day's events added, removed or changed change it):
-- compared with classified_event_days by classify_since, stored by store_classified_event_days.
CREATE OR REPLACE TEMP TABLE event_days_now AS
SELECT date_trunc('day', event_time) AS day, count(*) AS events,
       sum(hash(event_time, host, source, kind, code, severity, message, device, reporter, file, line_no, job_id,
                peer))::HUGEINT AS digest
FROM node_events WHERE host IS NOT NULL
GROUP BY ALL;
