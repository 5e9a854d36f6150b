-- Daily source volume (analysis/ingest/daily.py): jobs that ended on $day, as the rows of source $source.
SELECT $source AS source, count(*) AS rows FROM jobs WHERE end_time >= $day AND end_time < $day + INTERVAL 1 DAY
