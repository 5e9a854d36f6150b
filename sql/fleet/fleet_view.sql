-- One fleet view: every cluster's rows of a table with the cluster's name. Written out by the caller with one
-- SELECT per cluster that has the table; columns matched by name, as a table may have gained a column in a
-- newer cluster's warehouse.
CREATE OR REPLACE TEMP VIEW {table} AS
{each_cluster}
