-- One fleet view: every cluster's rows of a table with the cluster's name. Written out by the caller with one
-- SELECT per cluster that has the table; columns matched by name, as a table may have gained a column in a
-- newer cluster's warehouse. In the in-memory database's main schema, not TEMP: a cluster's own views
-- (node_states, event_episodes, ...) name its tables unqualified, and DuckDB resolves such a name to a TEMP
-- object first, so each cluster's view read every cluster's rows.
CREATE OR REPLACE VIEW memory.main.{table} AS
{each_cluster}
