-- staged_k8s_jobs: job instances of Kubernetes workloads, from the newest state of each object (k8s_latest), in the
-- columns of jobs; sql/derive/stage_jobs.sql adds them to sacct's (docs/sources.md#kubernetes says the mapping).
-- $stage false (no kubernetes/ file read since the last build: analysis/derive/k8s_jobs.py): none.
-- The job is the top workload a pod belongs to (k8s_objects.job_key, named at ingest): its JobSet (label jobset.sigs.k8s.io/jobset-name), else its
-- Kubeflow job (training.kubeflow.org/job-name), else its batch Job (owner), else the pod itself when it has no
-- owner; pods of other controllers (ReplicaSet, DaemonSet, ...) are services, not jobs. job_id: namespace/name.
-- An instance is a restart attempt: the JobSet's jobset.sigs.k8s.io/restart-attempt pod label, else the pods
-- created within $gap_s of one another (a Job or PyTorchJob recreates failed pods later). A Kueue Workload owned
-- by the job gives its queue, priority, admission time and the evictions it recorded.
-- state, the first that holds: NODE_FAIL (a pod's DisruptionTarget DeletionByTaintManager, TerminationByKubelet or
-- DeletionByPodGC, a Kueue eviction for NodeFailures), PREEMPTED (DisruptionTarget PreemptionByScheduler, a Kueue
-- eviction Preempted or Preempted InClusterQueue/InCohort*), OUT_OF_MEMORY (a container OOMKilled), TIMEOUT
-- (DeadlineExceeded), COMPLETED (every pod Succeeded, or the workload completed and this is its last attempt),
-- FAILED (a container failed by itself: exit code neither 0 nor 143, no DisruptionTarget), REQUEUED (a later
-- attempt follows), CANCELLED (a pod evicted through the Eviction API: a drain, an operator),
-- FAILED (a pod or the workload failed), RUNNING / PENDING (a pod still live, started or not), CANCELLED (the pods
-- were deleted before they ended). The infrastructure's states come first:
-- when a node fails, its job's other pods fail too (their exit codes are collateral).
-- $since (NULL: every job): only the jobs an object of a kubernetes/ file read after it belongs to (job_key, which
-- the ingest names as this statement does), each from all its objects' newest states (k8s_latest's order).
CREATE OR REPLACE TEMP TABLE staged_k8s_jobs AS
WITH touched AS (
    SELECT DISTINCT namespace, job_key FROM k8s_objects
    WHERE $since IS NOT NULL AND job_key IS NOT NULL
      AND file IN (SELECT path FROM ingested_files WHERE source = 'kubernetes' AND ingested_at > $since)
), latest AS (
    SELECT * FROM k8s_objects
    WHERE $stage AND kind IN ('Pod', 'Job', 'JobSet', 'Workload', 'PyTorchJob', 'TrainJob')
      AND ($since IS NULL OR (namespace, job_key) IN (SELECT (namespace, job_key) FROM touched))
    QUALIFY row_number() OVER (PARTITION BY uid ORDER BY TRY_CAST(resource_version AS HUGEINT) DESC NULLS LAST,
                                                     observed_at DESC, deleted DESC, file DESC, line_no DESC) = 1
), objs AS (
    SELECT *, labels::JSON AS l, json_extract(conditions, '$[*]') AS conds,
           CASE WHEN json_valid(raw) THEN raw::JSON END AS doc  -- raw is clipped: a long object is not read
    FROM latest
), tops AS (
    -- the workload objects that are jobs (a JobSet's or a Kubeflow job's own Jobs are not), the newest of a name
    SELECT namespace, name AS job, uid, state AS top_state, reason AS top_reason, finished_at AS top_finished,
           deleted AS top_deleted,
           l->>'kueue.x-k8s.io/queue-name' AS top_queue, created_at, started_at, file, line_no,
           -- the application the workload runs (the recommended label), shared by its reruns as a Slurm job name
           -- is: job_runs chains on it; a workload without one is named by itself
           l->>'app.kubernetes.io/name' AS top_app
    FROM objs
    WHERE kind IN ('JobSet', 'PyTorchJob', 'TrainJob')
       OR (kind = 'Job' AND l->>'jobset.sigs.k8s.io/jobset-name' IS NULL
           AND coalesce(owner_kind, '') NOT IN ('JobSet', 'PyTorchJob', 'TrainJob'))
    QUALIFY row_number() OVER (PARTITION BY namespace, name ORDER BY created_at DESC, uid) = 1
), child_jobs AS (
    -- a JobSet's Jobs, by attempt: their Failed condition's reason (DeadlineExceeded) and time
    SELECT namespace, job_key AS job,
           TRY_CAST(l->>'jobset.sigs.k8s.io/restart-attempt' AS INTEGER) AS attempt,
           bool_or(reason = 'DeadlineExceeded') AS timed_out, max(finished_at) AS finished
    FROM objs WHERE kind = 'Job' AND l->>'jobset.sigs.k8s.io/jobset-name' IS NOT NULL
    GROUP BY ALL
), workloads AS (
    -- Kueue's Workload of the job (owned by it), the newest: queue, priority, admission, the eviction it records
    SELECT namespace, owner_name AS job, created_at,
           CASE WHEN doc IS NOT NULL THEN doc->>'$.spec.queueName' END AS queue,
           CASE WHEN doc IS NOT NULL THEN TRY_CAST(doc->>'$.spec.priority' AS BIGINT) END AS priority,
           CASE WHEN doc IS NOT NULL THEN doc->>'$.spec.priorityClassName' END AS priority_class,
           TRY_CAST(list_filter(conds, lambda c: c->>'type' = 'Admitted' AND c->>'status' = 'True')[1]
                    ->>'lastTransitionTime' AS TIMESTAMPTZ) AT TIME ZONE 'UTC' AS admitted_at,
           list_filter(conds, lambda c: c->>'type' = 'Evicted' AND c->>'status' = 'True')[1] AS evicted,
           list_filter(conds, lambda c: c->>'type' = 'Preempted' AND c->>'status' = 'True')[1]->>'reason' AS preempted
    FROM objs WHERE kind = 'Workload' AND owner_name IS NOT NULL
    QUALIFY row_number() OVER (PARTITION BY namespace, owner_name ORDER BY created_at DESC, uid) = 1
), kueue AS (
    SELECT * EXCLUDE (evicted), evicted->>'reason' AS evicted_reason,
           TRY_CAST(evicted->>'lastTransitionTime' AS TIMESTAMPTZ) AT TIME ZONE 'UTC' AS evicted_at
    FROM workloads
), pods AS (
    SELECT *,
           job_key AS job,  -- named at ingest (sql/ingest/k8s_objects_rows.sql): its JobSet, Kubeflow job, Job or itself
           TRY_CAST(l->>'jobset.sigs.k8s.io/restart-attempt' AS INTEGER) AS attempt_label,
           -- a pod a Job replaced within the attempt holds the same completion index: its GPUs count once
           coalesce(owner_name || '#' || (l->>'batch.kubernetes.io/job-completion-index'), name) AS slot,
           TRY_CAST(list_filter(conds, lambda c: c->>'type' = 'DisruptionTarget' AND c->>'status' = 'True')[1]
                    ->>'lastTransitionTime' AS TIMESTAMPTZ) AT TIME ZONE 'UTC' AS disrupted_at,
           CASE WHEN doc IS NOT NULL THEN doc->>'$.spec.priorityClassName' END AS priority_class,
           CASE WHEN doc IS NOT NULL THEN TRY_CAST(doc->>'$.spec.priority' AS BIGINT) END AS pod_priority,
           -- the hosts the pod may not run on (kubernetes.io/hostname NotIn in its required node affinity): how a
           -- Kubernetes user excludes a node, as `sbatch --exclude` on Slurm (a NotIn in any of its terms counts)
           CASE WHEN doc IS NOT NULL THEN flatten(list_transform(
               list_filter(json_extract(doc, '$.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution'
                                             || '.nodeSelectorTerms[*].matchExpressions[*]'),
                           lambda e: e->>'key' = 'kubernetes.io/hostname' AND e->>'operator' = 'NotIn'),
               lambda e: json_extract_string(e, '$.values[*]'))) END AS excluded
    FROM objs WHERE kind = 'Pod'
), member_pods AS (
    SELECT *, CASE WHEN created_at - lag(created_at) OVER (PARTITION BY namespace, job ORDER BY created_at, name)
                        <= to_seconds($gap_s) THEN 0 ELSE 1 END AS new_group
    FROM pods WHERE job IS NOT NULL
), attempts AS (
    SELECT *, coalesce(attempt_label, sum(new_group) OVER (PARTITION BY namespace, job ORDER BY created_at, name
                                                           ROWS UNBOUNDED PRECEDING)::INTEGER - 1) AS attempt
    FROM member_pods
), firsts AS (
    SELECT *, row_number() OVER (PARTITION BY namespace, job, attempt ORDER BY created_at, name, uid) = 1 AS first
    FROM attempts
), slots AS (
    SELECT namespace, job, attempt, max(gpus) AS gpus FROM firsts GROUP BY namespace, job, attempt, slot
), per_attempt AS (
    SELECT namespace, job, attempt,
           min(created_at) AS submit_time, min(started_at) AS start_time, max(finished_at) AS last_finish,
           max(disrupted_at) AS last_disruption,
           bool_or(disruption_reason IN ('DeletionByTaintManager', 'TerminationByKubelet', 'DeletionByPodGC'))
               AS node_fail,
           bool_or(disruption_reason = 'PreemptionByScheduler') AS preempted,
           bool_or(disruption_reason = 'EvictionByEvictionAPI') AS evicted_by_api,  -- kubectl drain, an operator
           bool_or(reason = 'OOMKilled') AS oom, bool_or(reason = 'DeadlineExceeded') AS timed_out,
           bool_or(state = 'Failed' OR coalesce(exit_code, 0) <> 0) AS failed,
           -- a container that failed by itself: not stopped (SIGTERM, 143, as a restart or deletion stops the
           -- attempt's other pods) and not disrupted (evicted, preempted, its node tainted)
           bool_or(coalesce(exit_code, 0) NOT IN (0, 143) AND disruption_reason IS NULL) AS failed_alone,
           bool_and(state = 'Succeeded') AS succeeded,
           bool_or(state IN ('Running', 'Pending', 'Unknown') AND NOT deleted) AS live,
           bool_or(started_at IS NOT NULL) AS started,
           list_sort(list_distinct(list(node_name))) AS nodes,
           nullif(list_sort(list_distinct(flatten(list(excluded) FILTER (WHERE excluded IS NOT NULL)))), [])
               AS excluded_hosts,
           -- the failing container: the first to end with a non-zero code
           arg_min(exit_code, finished_at) FILTER (WHERE exit_code <> 0) AS exit_code,
           arg_min(disruption_reason, disrupted_at) FILTER (WHERE disruption_reason IN (
               'DeletionByTaintManager', 'TerminationByKubelet', 'DeletionByPodGC')) AS node_fail_reason,
           arg_min(coalesce(disruption_reason, reason), coalesce(disrupted_at, finished_at))
               FILTER (WHERE disruption_reason IS NOT NULL OR reason IS NOT NULL) AS pod_reason,
           any_value(l->>'kueue.x-k8s.io/queue-name') FILTER (WHERE first) AS pod_queue,
           any_value(priority_class) FILTER (WHERE first) AS priority_class,
           any_value(pod_priority) FILTER (WHERE first) AS pod_priority,
           any_value(file) FILTER (WHERE first) AS file, any_value(line_no) FILTER (WHERE first) AS line_no
    FROM firsts GROUP BY namespace, job, attempt
    UNION ALL BY NAME
    -- a workload none of whose pods was seen (deleted before a snapshot): one instance from its own status
    SELECT namespace, job, 0 AS attempt, created_at AS submit_time, started_at AS start_time, FALSE AS node_fail,
           FALSE AS preempted, FALSE AS evicted_by_api, FALSE AS oom, FALSE AS timed_out, FALSE AS succeeded,
           top_state = 'Failed' AS failed,
           coalesce(top_state NOT IN ('Failed', 'Finished', 'Complete', 'Completed', 'Succeeded'), TRUE) AS live,
           started_at IS NOT NULL AS started, []::VARCHAR[] AS nodes, file, line_no
    FROM tops t WHERE NOT EXISTS (SELECT 1 FROM pods p WHERE p.namespace = t.namespace AND p.job = t.job)
), numbered AS (
    SELECT a.*, g.gpus,
           (row_number() OVER w - 1)::INTEGER AS instance,
           lead(a.submit_time) OVER w AS next_submit, lead(a.start_time) OVER w AS next_start,
           lead(a.attempt) OVER w IS NULL AS last
    FROM per_attempt a
    LEFT JOIN (SELECT namespace, job, attempt, sum(gpus)::INTEGER AS gpus FROM slots GROUP BY ALL) g
      USING (namespace, job, attempt)
    WINDOW w AS (PARTITION BY namespace, job ORDER BY attempt)
), judged AS (
    SELECT n.* REPLACE (CASE WHEN n.instance = 0 THEN least(n.submit_time, t.created_at, k.created_at)
                             ELSE n.submit_time END AS submit_time),  -- the workload's creation submits it
           t.uid, t.top_state, t.top_reason, t.top_finished, t.top_queue, t.top_deleted, t.top_app, c.timed_out AS child_timed_out,
           c.finished AS child_finished, k.queue, k.priority, k.priority_class AS workload_priority_class,
           k.admitted_at,
           -- Kueue's eviction belongs to the attempt running when it happened
           k.evicted_at IS NOT NULL AND k.evicted_at >= n.start_time
               AND (n.next_start IS NULL OR k.evicted_at < n.next_start) AS evicted_here,
           k.evicted_reason, k.preempted AS kueue_preempted, k.evicted_at
    FROM numbered n
    LEFT JOIN tops t USING (namespace, job)
    LEFT JOIN child_jobs c USING (namespace, job, attempt)
    LEFT JOIN kueue k USING (namespace, job)
), stated AS (
    SELECT *,
           CASE WHEN node_fail OR (evicted_here AND evicted_reason = 'NodeFailures') THEN 'NODE_FAIL'
                WHEN preempted OR (evicted_here AND (evicted_reason = 'Preempted' OR kueue_preempted = 'InClusterQueue'
                                                    OR kueue_preempted LIKE 'InCohort%')) THEN 'PREEMPTED'
                WHEN oom THEN 'OUT_OF_MEMORY'
                WHEN timed_out OR coalesce(child_timed_out, FALSE)
                     OR (last AND top_reason = 'DeadlineExceeded') THEN 'TIMEOUT'
                WHEN succeeded OR (last AND NOT live AND top_state IN ('Completed', 'Complete', 'Succeeded'))
                    THEN 'COMPLETED'
                -- an attempt that failed and was restarted (JobSet, Job backoff) failed: as Slurm writes FAILED for
                -- an instance its requeue policy restarts
                WHEN failed_alone THEN 'FAILED'
                WHEN NOT last THEN 'REQUEUED'
                WHEN evicted_by_api THEN 'CANCELLED'
                -- the workload deleted before it ended (kubectl delete, as scancel): its pods die of the SIGTERM
                WHEN last AND coalesce(top_deleted, FALSE)
                     AND coalesce(top_state, '') NOT IN ('Completed', 'Complete', 'Succeeded', 'Failed') THEN 'CANCELLED'
                WHEN failed OR top_state = 'Failed' THEN 'FAILED'
                WHEN live AND started THEN 'RUNNING'
                WHEN live THEN 'PENDING'
                ELSE 'CANCELLED' END AS job_state
    FROM judged
), ended AS (
    SELECT *,
           CASE WHEN job_state NOT IN ('RUNNING', 'PENDING')
                THEN coalesce(last_finish, child_finished, CASE WHEN last THEN top_finished END, last_disruption,
                              CASE WHEN evicted_here THEN evicted_at END, next_submit) END AS end_time
    FROM stated
)
SELECT namespace || '/' || job AS job_id, coalesce(uid, namespace || '/' || job) AS job_id_raw, instance,
       NULL::BIGINT AS array_job_id, NULL::BIGINT AS array_task_id, NULL::VARCHAR AS array_task_spec,
       NULL::INTEGER AS het_offset, namespace AS user_name, namespace AS account, coalesce(top_app, job) AS job_name,
       coalesce(queue, pod_queue, top_queue) AS partition, coalesce(priority_class, workload_priority_class) AS qos,
       coalesce(priority, pod_priority) AS priority, job_state AS state, NULL::VARCHAR AS cancelled_by,
       CASE WHEN exit_code > 128 THEN 0 ELSE exit_code END AS exit_code,
       -- a container killed by a signal exits 128 + its number (137: SIGKILL): sacct writes that 0:9
       CASE WHEN exit_code > 128 THEN exit_code - 128 WHEN exit_code IS NOT NULL THEN 0 END AS exit_signal,
       CASE job_state WHEN 'NODE_FAIL' THEN coalesce(node_fail_reason, evicted_reason)
                      WHEN 'PREEMPTED' THEN coalesce(CASE WHEN preempted THEN 'PreemptionByScheduler' END,
                                                     kueue_preempted, evicted_reason)
                      ELSE coalesce(pod_reason, CASE WHEN last THEN top_reason END) END AS reason,
       submit_time,
       CASE WHEN admitted_at BETWEEN submit_time AND coalesce(start_time, admitted_at) THEN admitted_at
            ELSE submit_time END AS eligible_time,
       start_time, end_time, date_diff('second', start_time, end_time) AS elapsed_s,
       len(nodes)::INTEGER AS n_nodes, gpus AS n_gpus, nodes, array_to_string(nodes, ',') AS node_list,
       attempt AS restarts, NULL::VARCHAR AS submit_line, excluded_hosts, file, line_no
FROM ended;
