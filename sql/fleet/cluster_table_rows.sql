-- Every row of one cluster's table, for the Parquet lake (analysis/fleet/lake.py); names written in by the caller,
-- quoted. The partition path carries the cluster: a column of that name (sacct's Cluster field, equal to it once
-- the run is checked) would clash with it in a reader.
SELECT COLUMNS(lambda c: c <> 'cluster') FROM {cluster}.main.{table}
