-- job_run_ettr: measured ETTR per job run (Meta §II-D). W = first
-- eligibility to last end; scheduled S = Σ runtime; Q = W - S (waiting in the
-- queue, after submission and after every interruption); restart overhead
-- min(u0, runtime) per start, and an interrupted instance (not completed, the
-- run went on) loses the work since its last checkpoint, (runtime - u0) mod Δt;
-- U = Σ(restart + lost); R = S - U = W - Q - U; ETTR = R / W. u0 and Δt: per
-- run, else per account (table ettr_parameters), else $u0_s and $dt_s.
-- failures: the run's failed instances (job_runs.failure, job_failure_causes.is_failure), its
-- last one included; interruptions: the instances the run went on after (failures, preemptions,
-- requeues for maintenance, cancellations), each losing work.
-- Staged (TEMP) for the runs of job_run_ettr_scope (every run, or those a nightly's changes touched:
-- sql/metrics/stage_job_run_ettr_scope.sql); store_job_run_ettr / replace_job_run_ettr write job_run_ettr.
CREATE OR REPLACE TEMP TABLE staged_job_run_ettr AS
WITH inst AS (
    SELECT r.run_id, r.run_seq, r.job_id, r.instance, r.state, r.failure, j.account, j.n_gpus, j.n_nodes,
           coalesce(j.eligible_time, j.submit_time) AS eligible, j.start_time, j.end_time,
           epoch(j.end_time) - epoch(j.start_time) AS run_s,
           r.run_seq < r.last_seq AS continued
    FROM (SELECT *, max(run_seq) OVER (PARTITION BY run_id) AS last_seq FROM job_runs  -- running ones included
          WHERE run_id IN (SELECT run_id FROM job_run_ettr_scope)) r
    JOIN jobs j USING (job_id, instance)
    WHERE j.end_time IS NOT NULL AND j.start_time IS NOT NULL
), params AS (
    SELECT i.*, coalesce(pr.u0_s, pa.u0_s, $u0_s) AS u0_s, coalesce(pr.dt_s, pa.dt_s, $dt_s) AS dt_s
    FROM inst i
    LEFT JOIN ettr_parameters pr ON pr.scope = 'run' AND pr.key = i.run_id
    LEFT JOIN ettr_parameters pa ON pa.scope = 'account' AND pa.key = i.account
), per_inst AS (
    SELECT p.*, least(p.u0_s, p.run_s) AS restart_s,
           CASE WHEN p.continued AND p.state <> 'COMPLETED' AND p.run_s > p.u0_s
                THEN (p.run_s - p.u0_s) % p.dt_s ELSE 0 END AS lost_s,
           p.continued AND p.state <> 'COMPLETED' AS interrupted,
           a.cause, a.domain
    FROM params p LEFT JOIN failure_attribution a
      ON a.job_id = p.job_id AND a.instance = p.instance AND a.is_primary
), causes AS (
    SELECT run_id, string_agg(cause || '=' || n, ', ' ORDER BY n DESC, cause) AS failure_causes
    FROM (SELECT run_id, cause, count(*) AS n FROM per_inst
          WHERE failure AND cause IS NOT NULL GROUP BY ALL)
    GROUP BY run_id
)
-- per-run values from the run's first instance (accounts can differ along a run)
SELECT run_id, arg_min(account, run_seq) AS account, max(n_gpus) AS n_gpus, max(n_nodes) AS n_nodes,
       count(*) AS instances, count(DISTINCT job_id) AS jobs,
       min(eligible) AS first_eligible, max(end_time) AS last_end,
       epoch(max(end_time)) - epoch(min(eligible)) AS wallclock_s,
       epoch(max(end_time)) - epoch(min(eligible)) - sum(run_s) AS queue_s, sum(run_s) AS scheduled_s,
       sum(restart_s + lost_s) AS unproductive_s,
       sum(run_s) - sum(restart_s + lost_s) AS productive_s,
       (sum(run_s) - sum(restart_s + lost_s)) / nullif(epoch(max(end_time)) - epoch(min(eligible)), 0) AS ettr,
       count(*) FILTER (WHERE interrupted) AS interruptions,
       count(*) FILTER (WHERE interrupted AND state = 'PREEMPTED') AS preemptions,
       count(*) FILTER (WHERE failure) AS failures,  -- job_runs.failure: as `goodput why` and the crash loops count
       any_value(c.failure_causes) AS failure_causes,
       arg_min(u0_s, run_seq) AS u0_s, arg_min(dt_s, run_seq) AS dt_s
FROM per_inst LEFT JOIN causes c USING (run_id)
GROUP BY run_id
ORDER BY run_id;
