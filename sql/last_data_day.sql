-- The last whole day the warehouse has jobs for (the one-shot run reports on it).
SELECT max(end_time)::DATE FROM jobs WHERE end_time IS NOT NULL
