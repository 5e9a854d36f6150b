SELECT count(*) FROM (SELECT job_id, instance FROM jobs GROUP BY ALL HAVING count(*) > 1)
