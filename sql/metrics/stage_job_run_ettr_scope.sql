-- job_run_ettr_scope (TEMP): the runs build_job_run_ettr and build_run_downtime compute again, when both tables
-- hold a build of the same statements and settings (analysis/derive/metrics.py): the runs whose digest in
-- job_run_ettr_inputs_now and job_run_ettr_inputs differ (new, gone, a row of an instance changed, or a progress
-- line or app event of its jobs), and, when a day's drains changed, every run whose windows reach that day. A run's windows
-- (sql/metrics/build_run_downtime.sql) end at most 6 hours after its last instance ended (the drain's; last_end as
-- built: a run whose instances changed is in the scope already); the drains of a changed day start at or after it.
CREATE OR REPLACE TEMP TABLE job_run_ettr_scope AS
WITH changed_runs AS (
    SELECT coalesce(n.run_id, k.run_id) AS run_id
    FROM (SELECT * FROM job_run_ettr_inputs_now WHERE kind = 'run') n
    FULL JOIN (SELECT * FROM job_run_ettr_inputs WHERE kind = 'run') k ON n.run_id = k.run_id
    WHERE n.n IS DISTINCT FROM k.n OR n.digest IS DISTINCT FROM k.digest
), since AS (
    SELECT min(coalesce(n.day, k.day)) AS t
    FROM (SELECT * FROM job_run_ettr_inputs_now WHERE kind <> 'run') n
    FULL JOIN (SELECT * FROM job_run_ettr_inputs WHERE kind <> 'run') k ON n.kind = k.kind AND n.day = k.day
    WHERE n.n IS DISTINCT FROM k.n OR n.digest IS DISTINCT FROM k.digest
)
SELECT run_id FROM changed_runs
UNION
SELECT e.run_id FROM job_run_ettr e CROSS JOIN since s WHERE e.last_end + INTERVAL 6 HOUR >= s.t;
