-- The first day any job ended on: where the daily partitions start (the report's days are job-end days).
SELECT min(end_time)::DATE FROM jobs WHERE end_time IS NOT NULL
