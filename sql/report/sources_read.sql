-- The source folders a warehouse has read (ingested_files.source), with how many files and how many job instances
-- came from each: the fleet report names a cluster's scheduler by where its jobs came from (slurm: sacct dumps,
-- kubernetes: workloads and pods; analysis.sources.JOBS_FROM), and knows whether Slurm's node states
-- (slurm_events/) were read at all. What the warehouse holds, not what a simulator's manifest says.
SELECT f.source, count(DISTINCT f.path) AS files, count(j.file) AS job_instances
FROM ingested_files f LEFT JOIN jobs j ON j.file = f.path
WHERE f.source IS NOT NULL
GROUP BY f.source
ORDER BY f.source
