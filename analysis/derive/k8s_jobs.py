"""Jobs from Kubernetes workloads: the jobs build (analysis/derive/jobs.py) stages them beside sacct's, in the
columns of jobs, so that job_runs, attribution, ETTR and lemons read a Kubernetes cluster's jobs as a Slurm one's.
The mapping (top workload = job, restart attempt = instance, DisruptionTarget and Kueue evictions = states) is in
sql/derive/stage_k8s_jobs.sql and docs/sources.md#kubernetes.

They are staged whole from each object's newest state (k8s_latest) when a kubernetes/ file was read since the last
build (or the jobs are built from scratch), else not at all: an object that changed (a new resourceVersion) changes
its job, a snapshot read twice changes none, and a nightly without Kubernetes files costs nothing here."""
from __future__ import annotations

from datetime import datetime

import duckdb

from analysis import sql

SOURCE = "kubernetes"
# Pods of one Job or PyTorchJob created this close together are one attempt: a controller creates an attempt's
# pods within seconds, and recreates a failed pod (a new attempt) only after it has run and failed. Not a user
# setting: the attempts JobSet numbers itself (its restart-attempt label) need none.
ATTEMPT_GAP_S = 60


def stage_step(con: duckdb.DuckDBPyConnection, through: datetime | None) -> tuple[str, dict]:
    """The run_steps entry that stages staged_k8s_jobs (before derive/changed_jobs, which reads it): every
    Kubernetes job when a kubernetes/ file was ingested after ``through`` (None: a build from scratch), else none
    (their rows in jobs stay as they are)."""
    newest = sql.query(con, "ops/source_files_through", {"sources": [SOURCE], "through": None})["through"][0]
    stage = through is None or (newest is not None and newest > through)
    return ("derive/stage_k8s_jobs", {"gap_s": ATTEMPT_GAP_S, "stage": stage})
