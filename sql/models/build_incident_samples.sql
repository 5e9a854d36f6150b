-- incident_samples: Anubis' node status samples (§3.3, §5.2). A sample is a
-- host at time t (weekly from its first appearance, and just after each of its
-- incidents, and at $end itself) with covariates from the incidents before t
-- only, and the time to its next incident, censored at $end. Incidents are those known at
-- the models' as_of (incidents_as_of) that
-- were critical, drained the node or got a repair ticket: kernel, switch and
-- health events and tickets are enough, no Slurm job is needed.
-- Categories: gpu, host, network, storage (by cause); windows 7, 30, 90 days and lifetime.
-- With $only_end (saved models score, none is trained) only the status at $end: the history's samples are
-- training data, and building them would make a nightly's cost grow with the history.
CREATE OR REPLACE TABLE incident_samples AS
WITH incidents AS (
    SELECT host, first_event, last_event, CASE WHEN returned_at < $end THEN returned_at END AS returned_at,
           CASE WHEN cause IN ('gpu_unavailable', 'gpu_memory', 'gpu_driver_firmware', 'nvlink') THEN 'gpu'
                WHEN cause IN ('infiniband_link', 'ethernet_link', 'nccl_timeout') THEN 'network'
                WHEN cause IN ('filesystem_mount') THEN 'storage' ELSE 'host' END AS category
    FROM incidents_as_of
    WHERE first_event < $end AND (severity = 'critical' OR drained_at < $end
                                  OR ticket_id IN (SELECT ticket_id FROM tickets WHERE opened < $end))
), population AS (
    SELECT host, first_seen FROM node_population WHERE first_seen < $end
), times AS (
    SELECT p.host, p.first_seen, unnest(generate_series(p.first_seen, $end - INTERVAL 1 SECOND, to_days($every_days))) AS t
    FROM population p WHERE NOT $only_end
    UNION
    SELECT p.host, p.first_seen, i.last_event + INTERVAL 1 SECOND AS t
    FROM population p JOIN incidents i USING (host) WHERE i.last_event + INTERVAL 1 SECOND < $end AND NOT $only_end
    UNION
    SELECT host, first_seen, $end AS t FROM population  -- the status at the end: what node_risk scores
), history AS (
    SELECT s.host, s.t,
           count(i.host) AS n_all,
           count(i.host) FILTER (WHERE i.first_event >= s.t - INTERVAL 7 DAY) AS n_7d,
           count(i.host) FILTER (WHERE i.first_event >= s.t - INTERVAL 30 DAY) AS n_30d,
           count(i.host) FILTER (WHERE i.first_event >= s.t - INTERVAL 90 DAY) AS n_90d,
           count(i.host) FILTER (WHERE i.category = 'gpu') AS gpu_all,
           count(i.host) FILTER (WHERE i.category = 'gpu' AND i.first_event >= s.t - INTERVAL 30 DAY) AS gpu_30d,
           count(i.host) FILTER (WHERE i.category = 'host') AS host_all,
           count(i.host) FILTER (WHERE i.category = 'host' AND i.first_event >= s.t - INTERVAL 30 DAY) AS host_30d,
           count(i.host) FILTER (WHERE i.category = 'network') AS network_all,
           count(i.host) FILTER (WHERE i.category = 'network' AND i.first_event >= s.t - INTERVAL 30 DAY) AS network_30d,
           count(i.host) FILTER (WHERE i.category = 'storage') AS storage_all,
           max(least(i.last_event, s.t)) AS last_incident,
           max(i.returned_at) FILTER (WHERE i.returned_at <= s.t) AS last_return
    -- an incident counts from its first event: one still going on at t is part of the node's status
    FROM times s LEFT JOIN incidents i ON i.host = s.host AND i.first_event < s.t
    GROUP BY s.host, s.t
), next_incident AS (
    SELECT s.host, s.t, min(i.first_event) AS next_at
    FROM times s JOIN incidents i ON i.host = s.host AND i.first_event > s.t
    GROUP BY s.host, s.t
)
SELECT s.host, s.t, s.first_seen,
       date_diff('second', s.first_seen, s.t) / 86400.0 AS age_days,
       date_diff('second', coalesce(h.last_return, h.last_incident, s.first_seen), s.t) / 3600.0 AS uptime_h,
       date_diff('second', coalesce(h.last_incident, s.first_seen), s.t) / 3600.0 AS since_incident_h,
       h.n_all, h.n_7d, h.n_30d, h.n_90d, h.gpu_all, h.gpu_30d, h.host_all, h.host_30d, h.network_all, h.network_30d,
       h.storage_all,
       -- mean time between incidents so far (hours); with none yet, the node's age
       date_diff('second', s.first_seen, s.t) / 3600.0 / greatest(h.n_all, 1) AS mtbi_h,
       date_diff('second', s.t, coalesce(n.next_at, $end)) / 3600.0 AS duration_h,
       n.next_at IS NOT NULL AS event
FROM times s JOIN history h USING (host, t) LEFT JOIN next_incident n USING (host, t)
ORDER BY s.t, s.host
