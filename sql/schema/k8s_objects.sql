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
-- Added with node states: Nodes' metadata.annotations as JSON text (NVSentinel's quarantineHealthEvent: why it
-- cordoned the node), NULL for other kinds. Rows read before it have none until their files are forgotten and
-- read again.
ALTER TABLE k8s_objects ADD COLUMN IF NOT EXISTS annotations VARCHAR;
-- Added with incremental Kubernetes jobs: the name of the job (the top workload) an object belongs to, as
-- sql/derive/stage_k8s_jobs.sql names it (a pod's JobSet or Kubeflow job label, else its owning Job, else
-- itself; a Workload's owner; a JobSet's or Kubeflow job's own name), NULL for other objects: a nightly stages
-- again only the jobs its new files touch. kubernetes/ files are read again once to fill it (READ_AGAIN).
ALTER TABLE k8s_objects ADD COLUMN IF NOT EXISTS job_key VARCHAR;
-- The newest state of each object (by resourceVersion, which the API server raises on every change; the newest
-- snapshot, then the newest record, among equal ones): what a derivation of jobs from workloads reads.
CREATE OR REPLACE VIEW k8s_latest AS
SELECT * FROM k8s_objects WHERE kind <> 'Event'
QUALIFY row_number() OVER (PARTITION BY uid ORDER BY TRY_CAST(resource_version AS HUGEINT) DESC NULLS LAST,
                                                 observed_at DESC, deleted DESC, file DESC, line_no DESC) = 1;
-- Kubernetes node states, as node_states has them (docs/sources.md#from-events-to-node-states): a cordon is a DRAIN, from the
-- kubelet's NodeNotSchedulable Event on the Node to its next NodeSchedulable, or from kube-state-metrics'
-- kube_node_spec_unschedulable turning 1 to its turning 0 (node_events kinds cordon / uncordon, ksm.py: where no
-- Event is collected); a node the node controller marked NotReady is DOWN until the kubelet's NodeReady. Each
-- occurrence of an Event counts once, at its lastTimestamp (an Event seen again keeps its uid and firstTimestamp);
-- a cordon repeated while cordoned changes nothing, so with both sources the Event and the metric's change (at
-- the next scrape, some seconds apart) are one cordon, from the first of them; an open period has time_end NULL.
-- A DRAIN's reason is the HealthEvent NVSentinel's fault-quarantine stored on the Node when it cordoned it
-- (annotation quarantineHealthEvent: one event, or a list of them), the newest generated at most an hour before
-- the cordon (it cordons within seconds), written the way a Slurm health check writes its drain reason
-- ('healthcheck: <check>: <message>') so the reason rules read both alike; 'cordoned' when no Node object
-- collected holds one (a cordon by hand records no reason). file, line_no: the Event (or the metric's sample)
-- that began it.
CREATE OR REPLACE VIEW k8s_node_states AS
WITH marks AS (
    SELECT involved_name AS host, coalesce(finished_at, started_at) AS t,
           CASE WHEN reason IN ('NodeNotSchedulable', 'NodeSchedulable') THEN 'DRAIN' ELSE 'DOWN' END AS state,
           reason IN ('NodeNotSchedulable', 'NodeNotReady') AS begins, file, line_no
    FROM k8s_objects
    WHERE kind = 'Event' AND involved_kind = 'Node' AND involved_name IS NOT NULL
      AND reason IN ('NodeNotSchedulable', 'NodeSchedulable', 'NodeNotReady', 'NodeReady')
      AND coalesce(finished_at, started_at) IS NOT NULL
    QUALIFY row_number() OVER (PARTITION BY involved_name, t, reason ORDER BY file, line_no) = 1
    UNION ALL
    SELECT host, event_time AS t, 'DRAIN' AS state, kind = 'cordon' AS begins, file, line_no
    FROM node_events
    WHERE source = 'node_health' AND reporter = 'kube-state-metrics' AND kind IN ('cordon', 'uncordon')
      AND host IS NOT NULL AND event_time IS NOT NULL
), turns AS (  -- the marks that change the state (a begin on a tie first: a cordon undone in its second is one)
    SELECT * FROM marks
    QUALIFY begins IS DISTINCT FROM lag(begins) OVER (PARTITION BY host, state ORDER BY t, begins DESC, file, line_no)
), periods AS (
    SELECT *, lead(t) OVER (PARTITION BY host, state ORDER BY t, begins DESC, file, line_no) AS t_end FROM turns
), quarantined AS (
    SELECT name AS host, q FROM (
        SELECT name, annotations->>'quarantineHealthEvent' AS q FROM k8s_objects
        WHERE kind = 'Node' AND annotations IS NOT NULL AND json_valid(annotations))
    WHERE json_valid(q)
), health_events AS (  -- generatedTimestamp: RFC 3339 (protojson) or {seconds, nanos} (Go's encoding/json)
    SELECT DISTINCT host, e->>'checkName' AS check_name, e->>'message' AS message,
           coalesce(TRY_CAST(e->>'generatedTimestamp' AS TIMESTAMPTZ) AT TIME ZONE 'UTC',
                    make_timestamp(TRY_CAST(e->'generatedTimestamp'->>'seconds' AS BIGINT) * 1000000
                                   + coalesce(TRY_CAST(e->'generatedTimestamp'->>'nanos' AS BIGINT), 0) // 1000))
               AS generated
    FROM quarantined,
         unnest(CASE json_type(q::JSON) WHEN 'ARRAY' THEN json_extract(q, '$[*]')
                                        WHEN 'OBJECT' THEN [q::JSON] ELSE [] END) AS u(e)
    WHERE e->>'checkName' IS NOT NULL
), goodput_drains AS (
    -- goodput's own cordons: kubectl.sh annotates the node with its reason ('goodput: drain_now ...', the tag the
    -- node lifecycle knows its drains by) and the time it cordoned it (analysis/nodes/scripts.py: the keys, which
    -- a view cannot take as parameters)
    SELECT DISTINCT name AS host, annotations->>'goodput.io/reason' AS reason,
           TRY_CAST(annotations->>'goodput.io/drained-at' AS TIMESTAMPTZ) AT TIME ZONE 'UTC' AS drained_at
    FROM k8s_objects
    WHERE kind = 'Node' AND annotations IS NOT NULL AND json_valid(annotations)
      AND annotations->>'goodput.io/reason' IS NOT NULL
)
SELECT p.host, p.t AS time_start, p.t_end AS time_end, p.state,
       CASE WHEN p.state = 'DOWN' THEN 'NodeNotReady'
            ELSE coalesce((SELECT arg_min(g.reason, abs(epoch(g.drained_at) - epoch(p.t)))
                           FROM goodput_drains g
                           WHERE g.host = p.host AND g.drained_at BETWEEN p.t - INTERVAL 1 HOUR
                                                                      AND p.t + INTERVAL 1 HOUR),
                          (SELECT arg_max('healthcheck: ' || h.check_name || coalesce(': ' || h.message, ''),
                                          h.generated)
                           FROM health_events h
                           WHERE h.host = p.host AND h.generated <= p.t AND h.generated >= p.t - INTERVAL 1 HOUR),
                          'cordoned') END AS reason,
       NULL::VARCHAR AS user_name, p.file, p.line_no
FROM periods p WHERE p.begins;
-- Every node state: Slurm's (sql/schema/warehouse.sql's slurm_node_states) and Kubernetes' above. Defined here,
-- not in warehouse.sql, because this file runs after it (DuckDB binds a view's tables when it creates one); the
-- node_states warehouse.sql creates first is Slurm's alone, replaced by this one on every schema run.
CREATE OR REPLACE VIEW node_states AS
SELECT host, time_start, time_end, state, reason, user_name, file, line_no FROM slurm_node_states
UNION ALL
SELECT host, time_start, time_end, state, reason, user_name, file, line_no FROM k8s_node_states;
