-- The first day whose node events differ from those classified_events was built from (NULL: none differs), and
-- whether the events without a time differ (then every event is classified again).
SELECT min(coalesce(n.day, k.day)), bool_or(n.day IS NULL AND k.day IS NULL)
FROM event_days_now n FULL JOIN classified_event_days k ON n.day IS NOT DISTINCT FROM k.day
WHERE n.events IS DISTINCT FROM k.events OR n.digest IS DISTINCT FROM k.digest
