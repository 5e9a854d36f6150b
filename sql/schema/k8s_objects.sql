-- kubernetes/ (analysis/ingest/parsers/kubernetes.py): one row per Kubernetes object state read from kubectl
-- `get -o json` snapshots, watch output and event-exporter lines; Events are rows of kind 'Event'. An object
-- state (uid, resource_version, deleted) is stored once, by the first file that holds it: a later snapshot
-- holding it again counts the record as skipped (docs/warehouse.md#kubernetes-objects).
CREATE TABLE IF NOT EXISTS k8s_objects (
    kind VARCHAR, api_version VARCHAR, namespace VARCHAR, name VARCHAR, uid VARCHAR, resource_version VARCHAR,
    observed_at TIMESTAMP,         -- UTC: the snapshot's time, the file's mtime (a List or a watch carries none)
    deleted BOOLEAN,               -- a watch DELETED event
    owner_kind VARCHAR, owner_name VARCHAR, owner_uid VARCHAR,  -- the controller owner reference (else the first)
    labels VARCHAR,                -- metadata.labels as JSON text
    node_name VARCHAR,             -- pods: spec.nodeName; Events: source.host
    gpus BIGINT,                   -- pods: sum of the containers' resources.limits["nvidia.com/gpu"]
    state VARCHAR,                 -- pods: status.phase; JobSet: terminalState; else the newest True condition's type
    created_at TIMESTAMP,          -- metadata.creationTimestamp
    started_at TIMESTAMP,          -- pods: the chosen terminated container's startedAt, else the running one's,
                                   -- else status.startTime; workloads: status.startTime; Events: first seen
    finished_at TIMESTAMP,         -- pods: that container's finishedAt; workloads: completionTime or the time of a
                                   -- True Finished/Failed/Complete/Completed/Succeeded condition; Events: last seen
    exit_code INTEGER,             -- pods: the terminated container (a failed one first, then the newest)
    reason VARCHAR,                -- pods: that container's reason (OOMKilled, Error) else status.reason,
                                   -- workloads: the state condition's reason; Events: the event's reason
    message VARCHAR,               -- the same record's message
    disruption_reason VARCHAR,     -- pods: the True DisruptionTarget condition's reason (PreemptionByScheduler, ...)
    conditions VARCHAR,            -- status.conditions as JSON text (type, status, reason, message, lastTransitionTime)
    restarts BIGINT,               -- pods: containers' restartCount; JobSet: status.restarts; Kueue Workload: the
                                   -- larger of requeueState.count and the sum of schedulingStats.evictions' counts
    involved_kind VARCHAR, involved_name VARCHAR, involved_uid VARCHAR,  -- Events: involvedObject
    event_type VARCHAR,            -- Events: Normal, Warning
    count BIGINT,                  -- Events: how many times it was seen (count, or series.count)
    source_component VARCHAR,      -- Events: source.component (reportingController)
    raw VARCHAR,                   -- the object's JSON, clipped (ad-hoc SQL)
    file VARCHAR, line_no BIGINT   -- line_no: the record (a List's items numbered from 1; a JSON line's line)
);
-- The newest state of each object (by resourceVersion, which the API server raises on every change; the newest
-- snapshot, then the newest record, among equal ones): what a derivation of jobs from workloads reads.
CREATE OR REPLACE VIEW k8s_latest AS
SELECT * FROM k8s_objects WHERE kind <> 'Event'
QUALIFY row_number() OVER (PARTITION BY uid ORDER BY TRY_CAST(resource_version AS HUGEINT) DESC NULLS LAST,
                                                 observed_at DESC, deleted DESC, file DESC, line_no DESC) = 1;
