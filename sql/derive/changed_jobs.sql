-- changed_jobs: the jobs whose records must be chosen again. $all: every job; else those named by a sacct
-- file ingested after $through, and the other records of their job arrays (a newer dump of an array drops
-- its stale pending range). The Kubernetes jobs staged (staged_k8s_jobs: sql/derive/stage_k8s_jobs.sql, those
-- the new kubernetes/ files touch) are chosen again.
CREATE OR REPLACE TEMP TABLE changed_jobs AS
WITH named AS (
    SELECT DISTINCT r.job_id, r.array_job_id FROM sacct_records r
    WHERE $all OR r.file IN (SELECT path FROM ingested_files
                             WHERE source = 'slurm' AND status = 'ok' AND ingested_at > $through)
)
SELECT job_id FROM named
UNION
SELECT r.job_id FROM sacct_records r WHERE NOT $all AND r.array_job_id IN (SELECT array_job_id FROM named)
UNION
SELECT job_id FROM staged_k8s_jobs;
