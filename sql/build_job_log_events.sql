-- Job-log lines as node events (source app): each line placed on a host, a time
-- and one of its job's instances. Replaces the job-log events of the last run.
--   time: the line's own (when within a day of the job's life); else the last stamped line above it in the file, else
--         the next one below; else the end of the job's last instance.
--   host: the one the line names (NCCL/pdsh prefix, srun, slurmstepd), short
--         name if the job's node list has it; else its rank through NCCL's init
--         lines or DeepSpeed's rank map; else rank or task by Slurm's block
--         distribution over the instance's node list (ranks per node =
--         ceil(ranks / nodes)).
--   peer: a transport error's peer address through topology.ip and
--         host_addresses (/etc/hosts), or the name itself when it is a node.
-- A name a line gives (an FQDN, a short name) as the node list's own name, else NULL.
CREATE OR REPLACE TEMP MACRO node_named(nodes, name) AS
    CASE WHEN list_contains(nodes, name) THEN name
         WHEN list_contains(nodes, split_part(name, '.', 1)) THEN split_part(name, '.', 1) END;
CREATE OR REPLACE TEMP TABLE staged_job_log_events AS
WITH spans AS (
    SELECT job_id, min(start_time) - INTERVAL 1 DAY AS lo, max(coalesce(end_time, start_time)) + INTERVAL 1 DAY AS hi
    FROM jobs WHERE start_time IS NOT NULL GROUP BY job_id
), trusted AS (
    -- a time outside the job's life is a misread stamp (a glog line's guessed year): use the neighbours'
    SELECT l.* REPLACE (CASE WHEN l.log_time BETWEEN s.lo AND s.hi THEN l.log_time END AS log_time)
    FROM job_log_lines l LEFT JOIN spans s USING (job_id)
), timed AS (
    SELECT *, coalesce(log_time,
        last_value(log_time IGNORE NULLS) OVER (PARTITION BY file ORDER BY line_no
            ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW),
        first_value(log_time IGNORE NULLS) OVER (PARTITION BY file ORDER BY line_no
            ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING)) AS t_fill
    FROM trusted
), placed AS (
    -- the instance: the last one that had started by the line's time (no time: the last one)
    SELECT t.*, j.instance, j.nodes, j.end_time AS instance_end
    FROM timed t JOIN jobs j ON j.job_id = t.job_id AND j.start_time IS NOT NULL
    QUALIFY row_number() OVER (PARTITION BY t.file, t.line_no, t.rank
        ORDER BY (t.t_fill IS NULL OR j.start_time <= t.t_fill + INTERVAL 1 MINUTE) DESC, j.start_time DESC) = 1
), sizes AS (
    SELECT job_id, instance, greatest(max(TRY_CAST(code AS BIGINT)) FILTER (WHERE kind = 'nccl_init'),
                                       max(rank) + 1) AS ranks, max(task) + 1 AS tasks
    FROM placed GROUP BY job_id, instance
), rank_hosts AS (
    SELECT job_id, instance, rank, min(host) AS host FROM placed
    WHERE kind IN ('nccl_init', 'rank_map') AND host IS NOT NULL AND rank IS NOT NULL
    GROUP BY job_id, instance, rank
), addresses AS (
    SELECT ip, min(host) AS host FROM (SELECT ip, host FROM topology WHERE ip IS NOT NULL
                                       UNION ALL SELECT ip, host FROM host_addresses) GROUP BY ip
), resolved AS (
    SELECT p.*, s.ranks, s.tasks, r.host AS init_host, a.host AS addr_host,
           coalesce(
               node_named(p.nodes, p.host), node_named(p.nodes, r.host),
               CASE WHEN p.rank IS NOT NULL AND s.ranks > 0
                    THEN p.nodes[(p.rank // greatest(1, ceil(s.ranks / len(p.nodes)))::BIGINT) + 1] END,
               CASE WHEN p.task IS NOT NULL AND s.tasks > 0
                    THEN p.nodes[(p.task // greatest(1, ceil(s.tasks / len(p.nodes)))::BIGINT) + 1] END,
               p.host) AS node
    FROM placed p
    JOIN sizes s USING (job_id, instance)
    LEFT JOIN rank_hosts r ON r.job_id = p.job_id AND r.instance = p.instance AND r.rank = p.rank
    LEFT JOIN addresses a ON a.ip = regexp_replace(p.peer, '^::ffff:', '')
)
SELECT coalesce(t_fill, instance_end) AS event_time, node AS host, 'app' AS source, kind,
       CASE WHEN kind = 'watchdog_position' THEN enqueued::VARCHAR ELSE code END AS code,
       NULL::VARCHAR AS severity, message, CASE WHEN rank IS NOT NULL THEN 'rank ' || rank END AS device,
       node AS reporter, file, line_no, job_id,
       coalesce(addr_host, node_named(nodes, peer), peer) AS peer
FROM resolved
WHERE kind NOT IN ('nccl_init', 'rank_map', 'progress');
DELETE FROM node_events WHERE source = 'app' AND job_id IS NOT NULL;
INSERT INTO node_events BY NAME SELECT * FROM staged_job_log_events;
DROP TABLE temp.staged_job_log_events;
DROP MACRO temp.node_named;
