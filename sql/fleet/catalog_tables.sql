-- The tables and views of the attached clusters, what the fleet's views union.
SELECT table_catalog AS cluster, table_name, table_type
FROM information_schema.tables
WHERE table_schema = 'main' AND table_catalog = ANY($clusters)
ORDER BY table_name, cluster
