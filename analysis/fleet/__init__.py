"""A fleet of clusters: one source tree and one warehouse per cluster, and views across them.

Each cluster's nightly is the single-cluster pipeline on its own tree (``SRC/<cluster>/slurm/...``) into its own
warehouse (``<db dir>/<cluster>.duckdb``): one writer per file, so clusters run at the same time, on one machine or
on several. The fleet's tables are each cluster's tables with a ``cluster`` column, read through read-only
attachments (``views``); host names are unique only within a cluster, so every fleet row carries its cluster.
"""
