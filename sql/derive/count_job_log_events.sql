SELECT count(*) AS events, count(*) FILTER (WHERE host IS NULL) AS unplaced,
       count(DISTINCT job_id) AS jobs FROM node_events WHERE source = 'app' AND job_id IS NOT NULL
