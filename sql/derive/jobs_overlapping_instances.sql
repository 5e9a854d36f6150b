-- Instances of one job id that overlap in time: requeues run one after
-- another, so an overlap means two dumps disagree or a job id was reused.
SELECT count(*) FROM (
    SELECT job_id, instance, start_time,
           lag(end_time) OVER (PARTITION BY job_id ORDER BY instance) AS previous_end
    FROM jobs)
WHERE start_time < previous_end
