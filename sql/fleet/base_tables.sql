-- The base tables of the attached clusters (views are derived from them: a lake reader rebuilds those).
SELECT table_catalog AS cluster, table_name
FROM information_schema.tables
WHERE table_schema = 'main' AND table_type = 'BASE TABLE' AND table_catalog = ANY($clusters)
ORDER BY cluster, table_name
