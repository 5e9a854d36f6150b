SELECT * FROM cluster_failure_rate
