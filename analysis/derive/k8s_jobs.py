"""Jobs from Kubernetes workloads: the jobs build (analysis/derive/jobs.py) stages them beside sacct's, in the
columns of jobs, so that job_runs, attribution, ETTR and lemons read a Kubernetes cluster's jobs as a Slurm one's.
The mapping (top workload = job, restart attempt = instance, DisruptionTarget and Kueue evictions = states) is in
sql/derive/stage_k8s_jobs.sql and docs/sources.md#kubernetes.

A job is staged whole, from its objects' newest states, when an object of a kubernetes/ file read since the last
build belongs to it (k8s_objects.job_key; every job when the jobs are built from scratch): an object that changed
(a new resourceVersion) changes its job, a snapshot read twice changes none (its unchanged states are not stored
again), and a nightly stages the jobs its files touch, not the whole history."""
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
    """The run_steps entry that stages staged_k8s_jobs (before derive/changed_jobs, which reads it): the
    Kubernetes jobs an object of a kubernetes/ file ingested after ``through`` belongs to (None: a build from
    scratch, every job), none when no such file (their rows in jobs stay as they are)."""
    newest = sql.query(con, "ops/source_files_through", {"sources": [SOURCE], "through": None})["through"][0]
    stage = through is None or (newest is not None and newest > through)
    return ("derive/stage_k8s_jobs", {"gap_s": ATTEMPT_GAP_S, "stage": stage, "since": through})
