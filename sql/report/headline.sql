-- Headline numbers for the report covering data up to $day.
WITH days AS (
    SELECT day, goodput FROM goodput_daily WHERE day <= $day
), last7 AS (
    SELECT avg(goodput) AS g FROM days WHERE day > $day::TIMESTAMP - INTERVAL 7 DAY
), prev7 AS (
    SELECT avg(goodput) AS g FROM days
    WHERE day <= $day::TIMESTAMP - INTERVAL 7 DAY AND day > $day::TIMESTAMP - INTERVAL 14 DAY
), ended AS (  -- runs as the report's day knows them: ended by its end (as the ETTR chart has them)
    SELECT * FROM job_run_ettr WHERE last_end < $day::TIMESTAMP + INTERVAL 1 DAY
), largest AS (
    SELECT median(ettr) AS ettr, count(*) AS runs, min(n_gpus) AS min_gpus FROM ended
    WHERE n_gpus >= (SELECT greatest(64, quantile_disc(n_gpus, 0.99)) FROM ended) AND scheduled_s >= 6 * 3600
), infra AS (
    SELECT count(*) AS jobs, coalesce(sum(lost_gpu_hours), 0) AS lost FROM goodput_losses l
    WHERE l.infra AND l.end_time < $day::TIMESTAMP + INTERVAL 1 DAY
), worst AS (
    SELECT l.cause, sum(l.lost_gpu_hours) AS lost FROM goodput_losses l
    WHERE l.infra AND l.end_time < $day::TIMESTAMP + INTERVAL 1 DAY GROUP BY l.cause ORDER BY lost DESC LIMIT 1
), rate AS (
    -- Meta's r as of the report's day: the one definition (sql/metrics/build_cluster_failure_rate.sql), which
    -- cluster_failure_rate and `goodput ettr --from-db` hold as of the last day
    SELECT r_per_1000_node_days AS r_per_1000 FROM failure_rate_as_of($day)
), out_of_service AS (
    SELECT count(*) AS nodes FROM nodes_out_of_service($day)
)
SELECT (SELECT g FROM last7) AS goodput_7d, (SELECT g FROM prev7) AS goodput_prev_7d,
       (SELECT ettr FROM largest) AS ettr_largest, (SELECT runs FROM largest) AS largest_runs,
       (SELECT min_gpus FROM largest) AS largest_min_gpus,
       (SELECT jobs FROM infra) AS infra_failed_jobs, (SELECT lost FROM infra) AS infra_lost_gpu_hours,
       (SELECT cause FROM worst) AS worst_cause, (SELECT lost FROM worst) AS worst_cause_gpu_hours,
       (SELECT nodes FROM out_of_service) AS nodes_out_of_service,
       (SELECT count(*) FROM jobs WHERE submit_time < $day::TIMESTAMP + INTERVAL 1 DAY) AS job_instances,
       -- job time: the GPU-hours jobs were scheduled (goodput_daily, running jobs counted day by day), the one
       -- definition the capacity split divides
       (SELECT sum(scheduled_gpu_hours) FROM goodput_daily WHERE day <= $day) AS gpu_hours,
       (SELECT r_per_1000 FROM rate) AS r_per_1000_node_days
