-- The cluster a warehouse holds, NULL when no run named one.
SELECT any_value(cluster) FROM warehouse_cluster
