-- kubernetes/ records (analysis/ingest/parsers/kubernetes.py): each record of k8s_texts(line_no, text) as the
-- columns of k8s_objects, or why it is none: why (a reject) or skip (a watch BOOKMARK: no object state),
-- is_object: the record is a JSON object (a file with none is no Kubernetes JSON).
-- $snapshot: the observed_at of every row, $clip: the characters of raw kept. Every JSON function reads only
-- records that decoded (the CASEs), so one broken record cannot fail the block. An object is parsed once for
-- all its scalar fields (s) and once for the parts read further (p: conditions, owners, containers, ...):
-- a JSON function parses its whole input on every call.
WITH typed AS (
    SELECT line_no, text, CASE WHEN json_valid(text) THEN json_type(text) END AS jtype FROM k8s_texts
), watched AS (
    SELECT *, CASE WHEN jtype = 'OBJECT' THEN json_extract(text, ['$.type', '$.object']) END AS w FROM typed
), objects AS (
    SELECT line_no, text, jtype,
           CASE WHEN json_type(w[2]) = 'OBJECT'
                 AND w[1]->>'$' IN ('ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK', 'ERROR') THEN w[1]->>'$' END AS watch,
           CASE WHEN json_type(w[2]) = 'OBJECT'
                 AND w[1]->>'$' IN ('ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK', 'ERROR') THEN w[2]
                WHEN jtype = 'OBJECT' THEN text::JSON END AS obj
    FROM watched
), parsed AS (
    SELECT *,
           json_extract_string(obj, [
               '$.kind', '$.apiVersion', '$.metadata.namespace', '$.metadata.name', '$.metadata.uid',     -- 1-5
               '$.metadata.resourceVersion', '$.metadata.creationTimestamp', '$.spec.nodeName',          -- 6-8
               '$.source.host', '$.status.phase', '$.status.terminalState', '$.status.startTime',        -- 9-12
               '$.status.completionTime', '$.status.reason', '$.status.message', '$.status.restarts',    -- 13-16
               '$.status.requeueState.count', '$.reason', '$.message', '$.type', '$.count',              -- 17-21
               '$.series.count', '$.firstTimestamp', '$.eventTime', '$.lastTimestamp',                   -- 22-25
               '$.series.lastObservedTime', '$.source.component', '$.reportingController',               -- 26-28
               '$.involvedObject.kind', '$.involvedObject.name', '$.involvedObject.uid']) AS s,          -- 29-31
           json_extract(obj, ['$.status.conditions', '$.metadata.ownerReferences', '$.status.containerStatuses',
                              '$.spec.containers', '$.metadata.labels', '$.items', '$.involvedObject',
                              '$.status.schedulingStats.evictions', '$.metadata.annotations']) AS p
    FROM objects
), fields AS (
    SELECT line_no, text, jtype, watch, obj, s, p,
           coalesce(s[1], CASE WHEN json_type(p[7]) = 'OBJECT' THEN 'Event' END) AS kind,
           coalesce(json_type(p[6]) = 'ARRAY', false) AS is_list,
           json_extract(p[1], '$[*]') AS conds,
           list_transform(list_filter(list_concat(json_extract(p[3], '$[*].state.terminated'),
                                                  json_extract(p[3], '$[*].lastState.terminated')),
                                      lambda t: json_type(t) = 'OBJECT'),
                          lambda t: {'failed': coalesce(TRY_CAST(t->>'exitCode' AS INTEGER), 0) <> 0,
                                     'fin': t->>'finishedAt', 'code': TRY_CAST(t->>'exitCode' AS INTEGER),
                                     'reason': t->>'reason', 'start': t->>'startedAt', 'message': t->>'message'})
               AS terms,
           coalesce(list_filter(json_extract(p[2], '$[*]'), lambda o: o->>'controller' = 'true')[1],
                    json_extract(p[2], '$[0]')) AS owner
    FROM parsed
), picked AS (
    SELECT *,
           list_sort(terms, 'DESC', 'NULLS LAST')[1] AS term,
           list_sort(list_transform(list_filter(conds, lambda c: c->>'status' = 'True'),
                                    lambda c: {'t': c->>'lastTransitionTime', 'type': c->>'type',
                                               'reason': c->>'reason', 'message': c->>'message'}),
                     'DESC', 'NULLS LAST') AS true_conds
    FROM fields
), shaped AS (
    SELECT *,
           list_filter(true_conds, lambda c: c.type IN ('Finished', 'Failed', 'Complete', 'Completed', 'Succeeded'))[1]
               AS terminal,
           true_conds[1] AS newest
    FROM picked
)
SELECT line_no,
       CASE WHEN jtype IS NULL THEN 'not JSON (a record that does not decode)'
            WHEN jtype <> 'OBJECT' THEN 'a JSON ' || lower(jtype) || ', not a Kubernetes object'
            WHEN watch = 'ERROR' THEN 'a watch ERROR event (the watch broke, e.g. 410 Gone: restart it): '
                                      || coalesce(s[19], s[18], '')
            WHEN watch = 'BOOKMARK' THEN NULL
            WHEN is_list THEN 'a whole List on one line of a JSON-lines file: save each kubectl answer as a file of its own'
            WHEN kind IS NULL THEN 'an object without "kind" (not a Kubernetes object)'
            WHEN s[5] IS NULL THEN 'a ' || kind || ' without metadata.uid (kubectl get -o json writes it)'
       END AS why,
       CASE WHEN watch = 'BOOKMARK' THEN 'watch BOOKMARK event(s), no object state: skipped' END AS skip,
       coalesce(jtype = 'OBJECT', false) AS is_object,
       left(text, $clip) AS text_clip,
       kind, s[2] AS api_version, s[3] AS namespace, s[4] AS name, s[5] AS uid, s[6] AS resource_version,
       $snapshot::TIMESTAMP AS observed_at, coalesce(watch = 'DELETED', false) AS deleted,
       owner->>'kind' AS owner_kind, owner->>'name' AS owner_name, owner->>'uid' AS owner_uid,
       p[5]::VARCHAR AS labels,
       -- the job (top workload) it belongs to: what sql/derive/stage_k8s_jobs.sql groups pods and Jobs by
       CASE WHEN kind = 'Pod' THEN coalesce(p[5]->>'jobset.sigs.k8s.io/jobset-name', p[5]->>'training.kubeflow.org/job-name',
                                            CASE WHEN owner->>'kind' IN ('Job', 'PyTorchJob', 'TrainJob') THEN owner->>'name'
                                                 WHEN owner->>'kind' IS NULL THEN s[4] END)
            WHEN kind = 'Job' THEN coalesce(p[5]->>'jobset.sigs.k8s.io/jobset-name',
                                            CASE WHEN owner->>'kind' IN ('JobSet', 'PyTorchJob', 'TrainJob')
                                                 THEN owner->>'name' END, s[4])
            WHEN kind = 'Workload' THEN owner->>'name'
            WHEN kind IN ('JobSet', 'PyTorchJob', 'TrainJob') THEN s[4] END AS job_key,
       CASE WHEN kind = 'Node' THEN p[9]::VARCHAR END AS annotations,
       CASE WHEN kind = 'Event' THEN s[9] ELSE s[8] END AS node_name,
       CASE WHEN kind = 'Pod' THEN coalesce(list_sum(list_transform(
            json_extract_string(p[4], '$[*].resources.limits."nvidia.com/gpu"'), lambda g: TRY_CAST(g AS BIGINT))), 0)
       END AS gpus,
       CASE WHEN kind <> 'Event' THEN coalesce(s[10], s[11], terminal.type, newest.type) END AS state,
       TRY_CAST(s[7] AS TIMESTAMPTZ) AT TIME ZONE 'UTC' AS created_at,
       TRY_CAST(CASE WHEN kind = 'Event' THEN coalesce(s[23], s[24])
                     ELSE coalesce(term.start, list_min(json_extract_string(p[3], '$[*].state.running.startedAt')), s[12])
                END AS TIMESTAMPTZ) AT TIME ZONE 'UTC' AS started_at,
       TRY_CAST(CASE WHEN kind = 'Event' THEN coalesce(s[25], s[26], s[24])
                     ELSE coalesce(term.fin, s[13], terminal.t)
                END AS TIMESTAMPTZ) AT TIME ZONE 'UTC' AS finished_at,
       term.code AS exit_code,
       CASE WHEN kind = 'Event' THEN s[18] WHEN kind = 'Pod' THEN coalesce(term.reason, s[14])
            ELSE coalesce(terminal.reason, newest.reason) END AS reason,
       CASE WHEN kind = 'Event' THEN s[19] WHEN kind = 'Pod' THEN coalesce(term.message, s[15])
            ELSE coalesce(terminal.message, newest.message) END AS message,
       list_filter(conds, lambda c: c->>'type' = 'DisruptionTarget' AND c->>'status' = 'True')[1]->>'reason'
           AS disruption_reason,
       p[1]::VARCHAR AS conditions,
       CASE WHEN kind = 'Pod' THEN list_sum(list_transform(json_extract_string(p[3], '$[*].restartCount'),
                                                          lambda r: TRY_CAST(r AS BIGINT)))
            WHEN kind = 'JobSet' THEN TRY_CAST(s[16] AS BIGINT)
            WHEN kind = 'Workload' THEN greatest(TRY_CAST(s[17] AS BIGINT),
                 list_sum(list_transform(json_extract_string(p[8], '$[*].count'), lambda r: TRY_CAST(r AS BIGINT))))
       END AS restarts,
       s[29] AS involved_kind, s[30] AS involved_name, s[31] AS involved_uid,
       CASE WHEN kind = 'Event' THEN s[20] END AS event_type,
       CASE WHEN kind = 'Event' THEN TRY_CAST(coalesce(s[21], s[22]) AS BIGINT) END AS count,
       CASE WHEN kind = 'Event' THEN coalesce(s[27], s[28]) END AS source_component,
       left(obj::VARCHAR, $clip) AS raw
FROM shaped
ORDER BY line_no
