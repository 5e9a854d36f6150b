-- Host groups for per-group criteria (a SKU or partition): a host's Slurm partition, when partitions
-- split the fleet: every host that ran jobs ran them in one partition only, and there are two or more.
-- Otherwise no rows: one criterion per metric for the whole fleet.
WITH hp AS (
    SELECT DISTINCT partition, unnest(nodes) AS host FROM jobs WHERE partition IS NOT NULL AND partition <> ''
), one AS (
    SELECT host, min(partition) AS "group", count(*) AS partitions FROM hp GROUP BY host
)
SELECT host, "group" FROM one
WHERE (SELECT max(partitions) FROM one) = 1 AND (SELECT count(DISTINCT "group") FROM one) >= 2
ORDER BY host
