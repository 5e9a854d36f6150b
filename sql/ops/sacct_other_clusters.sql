-- sacct files whose Cluster field names another cluster than the warehouse's: a dump filed under the wrong
-- cluster's tree, whose jobs would mix with this cluster's hosts.
SELECT file, min(cluster) AS cluster, count(*) AS n_rows
FROM sacct_records
WHERE cluster IS NOT NULL AND lower(cluster) <> lower($cluster)
GROUP BY file
ORDER BY file
