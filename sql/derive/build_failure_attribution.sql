-- failure_attribution: for each job instance that failed (or was ended with an
-- event in its window), every classified event on one of its nodes in
-- [end - $before_s, end + $after_s], and the primary cause chosen in Aegis'
-- order: critical host-side events, then host-side warnings, then distributed
-- symptoms (NCCL timeouts, resets: blamed on their 1-2 hosts, or on the host
-- they cluster on, else on no host: network or configuration), then an
-- operator's record (a drain reason or ticket the reason rules classified:
-- written after the fact, it explains a failure only when no machine saw
-- anything); info events are kept, never blamed.
-- Job-log events (job_id set) count only for their own job, anywhere from the
-- instance's start to its window's end. Among them, two kinds of evidence name
-- the host ahead of clustering: transport errors naming a peer (the host most
-- reporters name; a pair that names each other is a link, host NULL) and
-- PyTorch's watchdog positions (the 1-2 hosts whose ranks enqueued the least
-- work lag behind the others: the rest wait for them).
-- A FAILED instance with nothing to blame is `user`, NODE_FAIL `unattributed`,
-- OUT_OF_MEMORY `oom`.
-- Staged (TEMP) for the instances that ended at or after $redo_from (NULL: all; analysis/derive/attribution.py
-- attribute_failures); replace_failure_attribution / store_failure_attribution write failure_attribution.
CREATE OR REPLACE TEMP TABLE staged_failure_attribution AS
WITH targets AS (
    SELECT job_id, instance, state, start_time, end_time, nodes FROM jobs
    WHERE end_time IS NOT NULL AND ($redo_from IS NULL OR end_time >= $redo_from::TIMESTAMP)
      AND state IN ('FAILED', 'NODE_FAIL', 'OUT_OF_MEMORY', 'TIMEOUT', 'CANCELLED', 'REQUEUED')
), job_hosts AS (
    SELECT job_id, instance, state, start_time, end_time, unnest(nodes) AS host FROM targets
), job_hosts_by_time AS (
    -- each job host once per time bucket its window touches: node events join on (host, bucket), never
    -- against every event of the host (a hash join on host alone compared 480 M pairs over a year)
    SELECT *, unnest(generate_series(time_bucket(to_seconds($bucket_s), end_time - to_seconds($before_s)),
                                     end_time + to_seconds($after_s), to_seconds($bucket_s))) AS bucket
    FROM job_hosts
), hits AS (
    SELECT job_id, instance, state, end_time, host, event_time, source, kind, code, device, message, rule, cause,
           domain, severity, priority, distributed, file, line_no, peer, from_job_log,
           CASE WHEN severity = 'info' THEN 9
                WHEN source = 'straggler' THEN 9  -- a node that slowed its jobs ended none of them
                WHEN source IN ('slurm', 'ticket') THEN 4  -- an operator's record: written after the fact
                WHEN severity = 'critical' AND NOT distributed THEN 1
                WHEN severity = 'warning' AND NOT distributed THEN 2
                WHEN distributed THEN 3 ELSE 9 END AS tier
    FROM (SELECT h.job_id, h.instance, h.state, h.end_time, FALSE AS from_job_log, c.* EXCLUDE (job_id)
          FROM job_hosts_by_time h JOIN classified_events c
            ON c.host = h.host AND c.job_id IS NULL
           AND time_bucket(to_seconds($bucket_s), c.event_time) = h.bucket
           AND c.event_time BETWEEN h.end_time - to_seconds($before_s) AND h.end_time + to_seconds($after_s)
           AND ($redo_from IS NULL OR c.event_time >= $redo_from::TIMESTAMP - to_seconds($before_s))
          UNION ALL BY NAME
          SELECT h.job_id, h.instance, h.state, h.end_time, TRUE AS from_job_log, c.* EXCLUDE (job_id)
          FROM job_hosts h JOIN classified_events c
            ON c.host = h.host AND c.job_id = h.job_id
           AND c.event_time BETWEEN coalesce(h.start_time, h.end_time) - INTERVAL 1 MINUTE
                                AND h.end_time + to_seconds($after_s))
), named AS (
    -- transport errors: how many distinct reporters name each peer that is one of the job's hosts
    SELECT h.job_id, h.instance, h.peer AS named, count(DISTINCT h.host) AS reporters,
           list(DISTINCT h.host) AS by_hosts
    FROM hits h JOIN job_hosts j ON j.job_id = h.job_id AND j.instance = h.instance AND j.host = h.peer
    WHERE h.tier = 3 AND h.peer IS NOT NULL AND h.peer <> h.host
    GROUP BY ALL
), named_top AS (
    SELECT *, max(reporters) OVER (PARTITION BY job_id, instance) AS top FROM named
), named_verdict AS (
    -- the host most reporters name; two hosts tied at the top that name each other: their link
    SELECT job_id, instance, CASE WHEN count(*) = 1 THEN any_value(named) END AS suspect,
           CASE WHEN count(*) = 2
                 AND list_contains(list(by_hosts ORDER BY named)[1], list(named ORDER BY named)[2])
                 AND list_contains(list(by_hosts ORDER BY named)[2], list(named ORDER BY named)[1])
                THEN list(named ORDER BY named) END AS link_hosts,
           any_value(top) AS n
    FROM named_top WHERE reporters = top GROUP BY job_id, instance
), lagging AS (
    -- watchdog positions: the last work each host's ranks enqueued; the hosts behind the rest
    SELECT job_id, instance, host, min(TRY_CAST(code AS BIGINT)) AS enqueued FROM hits
    WHERE kind = 'watchdog_position' AND from_job_log GROUP BY ALL
), lag_verdict AS (
    SELECT job_id, instance, min(host) FILTER (WHERE enqueued = lo) AS suspect, lo AS behind, max(enqueued) AS ahead
    FROM (SELECT *, min(enqueued) OVER (PARTITION BY job_id, instance) AS lo FROM lagging)
    GROUP BY job_id, instance, lo
    HAVING lo < max(enqueued) AND count(*) FILTER (WHERE enqueued = lo) <= 2
), host_weights AS (
    -- distributed symptoms: how strongly each host stands out, and how many hosts report them (aggregates
    -- joined back: windows would sort the wide hits three times)
    SELECT job_id, instance, host, count(*) FILTER (WHERE tier = 3) AS host_weight FROM hits GROUP BY ALL
), spread AS (
    SELECT job_id, instance, count(*) FILTER (WHERE host_weight > 0) AS dist_hosts,
           sum(host_weight)::BIGINT AS dist_events
    FROM host_weights GROUP BY ALL
), weighed AS (
    SELECT h.*, w.host_weight, s.dist_hosts, s.dist_events
    FROM hits h JOIN host_weights w USING (job_id, instance, host) JOIN spread s USING (job_id, instance)
), verdicts AS (
    SELECT w.*, n.suspect AS named_host, n.link_hosts, n.n AS named_by, g.suspect AS lag_host, g.behind, g.ahead
    FROM weighed w
    LEFT JOIN named_verdict n ON w.tier = 3 AND n.job_id = w.job_id AND n.instance = w.instance
    LEFT JOIN lag_verdict g ON w.tier = 3 AND g.job_id = w.job_id AND g.instance = w.instance
), ranked AS (
    SELECT *, row_number() OVER (
        PARTITION BY job_id, instance
        -- the event's file and line last: ties (same host, time and rule) are broken the same way every run
        -- distributed symptoms: the most specific kind decides the cause (a transport error over a
        -- timeout), the host comes from the verdicts below or from clustering
        -- (a line naming the suspect, or from it, is the one shown as deciding)
        ORDER BY tier, CASE WHEN tier = 3 THEN -priority END,
                 CASE WHEN tier = 3 THEN NOT coalesce(peer = named_host OR list_contains(link_hosts, peer)
                                                      OR host = lag_host, FALSE) END,
                 CASE WHEN tier = 3 THEN -host_weight END,
                 priority DESC, event_time, host, rule, file, line_no
    ) AS pick,
        -- Aegis: on 1-2 hosts blame them; on many, blame the host the errors cluster on
        -- (at least 1.5x its fair share); otherwise suspect the network or configuration
        tier = 3 AND dist_hosts > 2 AND host_weight < 1.5 * dist_events / dist_hosts AS unclustered
    FROM verdicts
), explained AS (
    SELECT job_id, instance, state, end_time, cause, domain,
           CASE WHEN pick = 1 AND tier = 3 AND named_host IS NOT NULL THEN named_host
                WHEN pick = 1 AND tier = 3 AND link_hosts IS NOT NULL THEN NULL
                WHEN pick = 1 AND tier = 3 AND lag_host IS NOT NULL THEN lag_host
                WHEN pick = 1 AND unclustered THEN NULL ELSE host END AS host,
           CASE WHEN pick = 1 AND tier = 3 AND named_host IS NULL AND link_hosts IS NOT NULL
                THEN array_to_string(link_hosts, '<->') END AS link,
           event_time, source, kind, code, device, message,
           CASE WHEN pick = 1 AND tier = 3 AND named_host IS NOT NULL
                    THEN rule || ' (named by ' || named_by || ' peer' || CASE WHEN named_by > 1 THEN 's' ELSE '' END || ')'
                WHEN pick = 1 AND tier = 3 AND link_hosts IS NOT NULL
                    THEN rule || ' (link: the two hosts name each other)'
                WHEN pick = 1 AND tier = 3 AND lag_host IS NOT NULL
                    THEN rule || ' (lagging: enqueued work ' || behind || ', the others ' || ahead || ')'
                WHEN pick = 1 AND unclustered THEN rule || ' (no clustering host: network or configuration)'
                ELSE rule END AS rule,
           severity, file, line_no, (pick = 1 AND tier < 9) AS is_primary
    FROM ranked
), defaults AS (
    SELECT t.job_id, t.instance, t.state, t.end_time,
           CASE t.state WHEN 'NODE_FAIL' THEN 'unattributed' WHEN 'OUT_OF_MEMORY' THEN 'oom' ELSE 'user' END AS cause,
           CASE t.state WHEN 'NODE_FAIL' THEN 'infrastructure' ELSE 'user' END AS domain,
           NULL::VARCHAR AS host, NULL::VARCHAR AS link, NULL::TIMESTAMP AS event_time, NULL::VARCHAR AS source, NULL::VARCHAR AS kind,
           NULL::VARCHAR AS code, NULL::VARCHAR AS device, NULL::VARCHAR AS message, 'no-event' AS rule,
           NULL::VARCHAR AS severity, NULL::VARCHAR AS file, NULL::BIGINT AS line_no, TRUE AS is_primary
    FROM targets t
    WHERE t.state IN ('FAILED', 'NODE_FAIL', 'OUT_OF_MEMORY')
      AND NOT EXISTS (SELECT 1 FROM explained x WHERE x.job_id = t.job_id AND x.instance = t.instance AND x.is_primary)
)
SELECT * FROM explained UNION ALL BY NAME SELECT * FROM defaults
ORDER BY job_id, instance, is_primary DESC, event_time, host, rule, source, kind, code, device, message;
