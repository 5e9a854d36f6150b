-- A cluster's warehouse (or its published snapshot), read-only, under the cluster's name (analysis/fleet/views.py).
-- Names and paths are written in by the caller, quoted: ATTACH takes no parameters.
ATTACH {path} AS {cluster} (READ_ONLY)
