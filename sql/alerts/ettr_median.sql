-- The median measured ETTR of the job runs (job_run_ettr) and how many runs have one.
SELECT median(ettr) AS ettr, count(ettr) AS runs FROM job_run_ettr
