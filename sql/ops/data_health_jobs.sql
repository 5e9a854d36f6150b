-- How many job instances the warehouse holds (0: a report on node history alone).
SELECT count(*) FROM jobs
