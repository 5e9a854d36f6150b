-- Crash-looping runs that started by $day, with the preemptions their restarts caused.
SELECT c.run_id, c.job_id, any_value(j.job_name) AS job_name, any_value(j.user_name) AS user_name,
       max(j.n_gpus) AS n_gpus, any_value(c.run_failures) AS failures, any_value(c.preemptions_caused) AS preemptions_caused
FROM crash_loop_preemptions c JOIN jobs j USING (job_id)
GROUP BY c.run_id, c.job_id
HAVING min(j.submit_time) < $day::TIMESTAMP + INTERVAL 1 DAY
ORDER BY failures DESC, preemptions_caused DESC LIMIT 10
