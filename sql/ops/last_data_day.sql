-- The last day any job ended on (possibly partial): the one-shot run reports on it.
SELECT max(end_time)::DATE FROM jobs WHERE end_time IS NOT NULL
