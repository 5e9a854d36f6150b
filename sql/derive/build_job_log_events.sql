-- Job-log lines as node events (source app): each line placed on a host, a time
-- and one of its job's instances. Replaces the job-log events of the last run: all of them ($all), else
-- those of the jobs in job_log_scope (sql/derive/stage_job_log_scope.sql); job_log_jobs keeps the instances
-- the events were placed with, for the next run's scope.
--   time: the line's own (when within a day of the job's life); else the last stamped line above it in the file, else
--         the next one below; else the end of the job's last instance.
--   host: the one the line names (NCCL/pdsh prefix, srun, slurmstepd), short
--         name if the job's node list has it; else its rank through NCCL's init
--         lines, DeepSpeed's rank map or torchrun's ChildFailedError entries;
--         else its srun task (srun --label) where an srun error line named the
--         task's host; else its rank as an srun task, when srun ran the ranks
--         itself (more tasks than nodes, no torchrun); else its torchrun local
--         rank ([default3]:) through the failed worker of that local rank that
--         failed first (one host, else none); else rank or task by Slurm's block
--         distribution over the instance's node list (ranks per node =
--         ceil(ranks / nodes)); else the node of a one-node job.
--   peer: a transport error's peer address through topology.ip and
--         host_addresses (/etc/hosts), or the name itself when it is a node.
-- A name a line gives (an FQDN, a short name) as the node list's own name, else NULL.
CREATE OR REPLACE TEMP MACRO node_named(nodes, name) AS
    CASE WHEN list_contains(nodes, name) THEN name
         WHEN list_contains(nodes, split_part(name, '.', 1)) THEN split_part(name, '.', 1) END;
CREATE OR REPLACE TEMP TABLE staged_job_log_events AS
WITH lines AS (
    SELECT * FROM job_log_lines WHERE $all OR job_id IN (SELECT job_id FROM job_log_scope)
), logged_jobs AS MATERIALIZED (
    -- the instances of the jobs with logs (a few percent of all jobs): the joins below need no others
    SELECT job_id, instance, start_time, end_time, nodes FROM jobs WHERE job_id IN (SELECT job_id FROM lines)
), spans AS (
    SELECT job_id, min(start_time) - INTERVAL 1 DAY AS lo, max(coalesce(end_time, start_time)) + INTERVAL 1 DAY AS hi
    FROM logged_jobs WHERE start_time IS NOT NULL GROUP BY job_id
), trusted AS (
    -- a time outside the job's life is a misread stamp (a glog line's guessed year): use the neighbours'
    SELECT l.* REPLACE (CASE WHEN l.log_time BETWEEN s.lo AND s.hi THEN l.log_time END AS log_time)
    FROM lines l LEFT JOIN spans s USING (job_id)
), timed AS (
    SELECT *, coalesce(log_time,
        last_value(log_time IGNORE NULLS) OVER (PARTITION BY file ORDER BY line_no
            ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW),
        first_value(log_time IGNORE NULLS) OVER (PARTITION BY file ORDER BY line_no
            ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING)) AS t_fill
    FROM trusted
), starts AS (
    SELECT job_id, start_time, max(start_time) OVER (PARTITION BY job_id) AS last_start
    FROM logged_jobs WHERE start_time IS NOT NULL
), picked AS (
    -- the instance: the last one that had started by the line's time (no time, or none yet: the last one);
    -- an ASOF join on narrow rows (a window over every line x instance was minutes on crash-looping jobs)
    SELECT t.*, coalesce(a.start_time, a.last_start, l.last_start) AS picked_start
    FROM timed t
    ASOF LEFT JOIN starts a ON a.job_id = t.job_id AND t.t_fill + INTERVAL 1 MINUTE >= a.start_time
    JOIN (SELECT DISTINCT job_id, last_start FROM starts) l ON l.job_id = t.job_id
), placed AS MATERIALIZED (
    -- no node lists here: a line of a 100-node job would carry 100 names through every step below
    SELECT t.* EXCLUDE (picked_start), j.instance, j.end_time AS instance_end
    FROM picked t JOIN logged_jobs j ON j.job_id = t.job_id AND j.start_time = t.picked_start
), sections AS (
    -- torchrun's ChildFailedError blocks, one field a line; an entry is under "Failures:" or "Root Cause"
    SELECT *, last_value(CASE WHEN code IN ('failures', 'root') THEN code END IGNORE NULLS) OVER (
        PARTITION BY file ORDER BY line_no ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS section
    FROM placed WHERE kind = 'elastic_failure'
), elastic AS MATERIALIZED (
    -- each failed worker: its host line and the rank line below it (the template's order), failed at the
    -- time line above (the host line's filled time)
    SELECT h.job_id, h.instance, h.host, r.rank, r.local_rank, h.t_fill AS failed_at,
           coalesce(h.section = 'root', FALSE) AS root
    FROM sections h JOIN sections r ON r.file = h.file AND r.line_no = h.line_no + 1 AND r.code = 'rank'
    WHERE h.code = 'host' AND h.host IS NOT NULL
), sizes AS (
    SELECT job_id, instance, greatest(max(TRY_CAST(code AS BIGINT)) FILTER (WHERE kind = 'nccl_init'),
                                       max(rank) + 1) AS ranks, max(task) + 1 AS tasks,
           bool_or(kind = 'elastic_failure') AS torchrun
    FROM placed GROUP BY job_id, instance
), rank_hosts AS (
    SELECT job_id, instance, rank, min(host) AS host
    FROM (SELECT job_id, instance, rank, host FROM placed
          WHERE kind IN ('nccl_init', 'rank_map') AND host IS NOT NULL AND rank IS NOT NULL
          UNION ALL SELECT job_id, instance, rank, host FROM elastic)
    GROUP BY job_id, instance, rank
), task_hosts AS (
    -- srun: error: <host>: tasks 0-7: ... names where those tasks ran
    SELECT job_id, instance, task, min(host) AS host FROM placed
    WHERE kind = 'srun_exit' AND host IS NOT NULL AND task IS NOT NULL
    GROUP BY job_id, instance, task
), local_hosts AS (
    -- a local rank is on every node: the host of the worker with that local rank that failed first (the
    -- root cause of its agent first among equal times), when that is one host
    SELECT job_id, instance, local_rank, min(host) AS host
    FROM (SELECT *, rank() OVER (PARTITION BY job_id, instance, local_rank
                                 ORDER BY failed_at NULLS LAST, root DESC) AS k FROM elastic)
    WHERE k = 1 GROUP BY job_id, instance, local_rank HAVING count(DISTINCT host) = 1
), addresses AS (
    SELECT ip, min(host) AS host FROM (SELECT ip, host FROM topology WHERE ip IS NOT NULL
                                       UNION ALL SELECT ip, host FROM host_addresses) GROUP BY ip
), resolved AS MATERIALIZED (
    SELECT p.* EXCLUDE (nodes), s.ranks, s.tasks, r.host AS init_host,
           coalesce(a.host, node_named(p.nodes, p.peer), p.peer) AS peer_host,
           coalesce(
               node_named(p.nodes, p.host), node_named(p.nodes, r.host), node_named(p.nodes, tk.host),
               CASE WHEN NOT s.torchrun AND s.tasks > len(p.nodes) THEN node_named(p.nodes, tr.host) END,
               node_named(p.nodes, lh.host),
               CASE WHEN p.rank IS NOT NULL AND s.ranks > 0
                    THEN p.nodes[(p.rank // greatest(1, ceil(s.ranks / len(p.nodes)))::BIGINT) + 1] END,
               CASE WHEN p.task IS NOT NULL AND s.tasks > 0
                    THEN p.nodes[(p.task // greatest(1, ceil(s.tasks / len(p.nodes)))::BIGINT) + 1] END,
               CASE WHEN len(p.nodes) = 1 THEN p.nodes[1] END,
               p.host) AS node
    FROM (SELECT p.*, j.nodes FROM placed p JOIN logged_jobs j USING (job_id, instance)) p
    JOIN sizes s USING (job_id, instance)
    LEFT JOIN rank_hosts r ON r.job_id = p.job_id AND r.instance = p.instance AND r.rank = p.rank
    LEFT JOIN task_hosts tk ON tk.job_id = p.job_id AND tk.instance = p.instance AND tk.task = p.task
    LEFT JOIN task_hosts tr ON tr.job_id = p.job_id AND tr.instance = p.instance AND tr.task = p.rank
    LEFT JOIN local_hosts lh ON lh.job_id = p.job_id AND lh.instance = p.instance AND lh.local_rank = p.local_rank
    LEFT JOIN addresses a ON a.ip = regexp_replace(p.peer, '^::ffff:', '')
), events AS (
    SELECT * FROM resolved WHERE kind NOT IN ('nccl_init', 'rank_map', 'progress', 'step_time', 'elastic_failure', 'srun_exit')
    UNION ALL
    -- an srun line is one event, whatever number of tasks it names
    (SELECT * FROM resolved WHERE kind = 'srun_exit'
     QUALIFY row_number() OVER (PARTITION BY file, line_no ORDER BY task) = 1)
)
SELECT coalesce(t_fill, instance_end) AS event_time, node AS host, 'app' AS source, kind,
       CASE WHEN kind = 'watchdog_position' THEN enqueued::VARCHAR ELSE code END AS code,
       NULL::VARCHAR AS severity, message, CASE WHEN rank IS NOT NULL THEN 'rank ' || rank END AS device,
       node AS reporter, file, line_no, job_id, peer_host AS peer
FROM events;
DELETE FROM node_events WHERE source = 'app' AND job_id IS NOT NULL
                          AND ($all OR job_id IN (SELECT job_id FROM job_log_scope));
INSERT INTO node_events BY NAME SELECT * FROM staged_job_log_events;
CREATE OR REPLACE TABLE job_log_jobs AS
SELECT job_id, instance, start_time, end_time, nodes FROM jobs WHERE job_id IN (SELECT job_id FROM job_log_lines)
ORDER BY job_id, instance;
DROP TABLE temp.staged_job_log_events;
DROP TABLE temp.job_log_scope;
DROP MACRO temp.node_named;
