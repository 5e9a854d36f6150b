-- job_run_scope (TEMP): the jobs build_job_runs chains again, when job_runs holds a build of the same statements
-- and settings (analysis/derive/attribution.py). A changed job: a digest of its rows in job_run_inputs and of those
-- job_runs keeps differ (new, gone, requeued, its state, times or failure changed). Runs never cross a (user, job
-- name, size) group, as per_job keys it (the first instance's), and within one they follow the jobs' order (first
-- start, job id): a job's chaining reads only the job before it. So in each group holding a changed job, before or
-- after its change, only the jobs from the start of the run before the first changed one are chained again; the
-- others' rows are those a build over every job gives. A nightly chains the last runs of the groups its day touched.
CREATE OR REPLACE TEMP TABLE job_run_scope AS
WITH now_jobs AS (
    -- each job's key, place and a digest of its instances' rows (changed: the digests or counts differ)
    SELECT job_id, arg_min(user_name, instance) AS user_name, arg_min(job_name, instance) AS job_name,
           arg_min(n_gpus, instance) AS n_gpus, {'t': min(start_time), 'j': job_id} AS pos, count(*) AS n,
           sum(hash(instance, user_name, job_name, n_gpus, state, submit_time, start_time, end_time,
                    failure))::HUGEINT AS d
    FROM job_run_inputs GROUP BY job_id
), kept_jobs AS (
    SELECT job_id, arg_min(user_name, instance) AS user_name, arg_min(job_name, instance) AS job_name,
           arg_min(n_gpus, instance) AS n_gpus, {'t': min(start_time), 'j': job_id} AS pos, count(*) AS n,
           sum(hash(instance, user_name, job_name, n_gpus, state, submit_time, start_time, end_time,
                    failure))::HUGEINT AS d, any_value(run_id) AS run_id
    FROM job_runs GROUP BY job_id
), changed AS (
    SELECT coalesce(a.job_id, b.job_id) AS job_id FROM now_jobs a FULL JOIN kept_jobs b ON a.job_id = b.job_id
    WHERE a.n IS DISTINCT FROM b.n OR a.d IS DISTINCT FROM b.d
), first_changed AS (
    -- per group, the first place a changed job takes or took
    SELECT user_name, job_name, n_gpus, min(pos) AS pos FROM (
        SELECT user_name, job_name, n_gpus, pos FROM now_jobs WHERE job_id IN (SELECT job_id FROM changed)
        UNION ALL
        SELECT user_name, job_name, n_gpus, pos FROM kept_jobs WHERE job_id IN (SELECT job_id FROM changed))
    GROUP BY ALL
), redo AS (
    -- from the start of the run the job before it belongs to (its run's first job: run_id names it), else from it
    SELECT f.user_name, f.job_name, f.n_gpus,
           coalesce(min(r.pos), f.pos) AS pos
    FROM first_changed f
    LEFT JOIN (SELECT k.user_name, k.job_name, k.n_gpus, arg_max(k.run_id, k.pos) AS run_id, max(k.pos) AS before
               FROM kept_jobs k JOIN first_changed f
                 ON k.user_name IS NOT DISTINCT FROM f.user_name AND k.job_name IS NOT DISTINCT FROM f.job_name
                AND k.n_gpus IS NOT DISTINCT FROM f.n_gpus AND k.pos < f.pos
               GROUP BY ALL) p
      ON p.user_name IS NOT DISTINCT FROM f.user_name AND p.job_name IS NOT DISTINCT FROM f.job_name
     AND p.n_gpus IS NOT DISTINCT FROM f.n_gpus
    LEFT JOIN kept_jobs r ON r.job_id = p.run_id
    GROUP BY f.user_name, f.job_name, f.n_gpus, f.pos
)
SELECT k.job_id FROM now_jobs k JOIN redo g
  ON k.user_name IS NOT DISTINCT FROM g.user_name AND k.job_name IS NOT DISTINCT FROM g.job_name
 AND k.n_gpus IS NOT DISTINCT FROM g.n_gpus AND k.pos >= g.pos
UNION
SELECT k.job_id FROM kept_jobs k JOIN redo g
  ON k.user_name IS NOT DISTINCT FROM g.user_name AND k.job_name IS NOT DISTINCT FROM g.job_name
 AND k.n_gpus IS NOT DISTINCT FROM g.n_gpus AND k.pos >= g.pos;
