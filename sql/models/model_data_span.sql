-- First and last timestamp of the history the node models learn from.
SELECT min(t0), max(t1) FROM (
    SELECT min(event_time) AS t0, max(event_time) AS t1 FROM node_events
    UNION ALL SELECT min(opened), max(coalesce(closed, opened)) FROM tickets
    UNION ALL SELECT min(time_start), max(coalesce(time_end, time_start)) FROM node_states
    UNION ALL SELECT min(start_time), max(end_time) FROM jobs
)
