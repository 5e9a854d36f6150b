-- Name the warehouse's cluster, once.
INSERT INTO warehouse_cluster SELECT $cluster WHERE NOT EXISTS (SELECT 1 FROM warehouse_cluster)
