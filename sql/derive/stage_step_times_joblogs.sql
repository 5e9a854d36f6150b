-- Step times from the jobs' own logs (appended to TEMP step_times_staged): the lines that carry a step's
-- duration (job_log_lines.step_seconds: torchtitan, Megatron, DeepSpeed, Hugging Face progress), placed on
-- the job instance running when they were printed, the worker named by the line's host, else by the host
-- the log maps its rank to (nccl_init / rank_map lines), else by its rank; jobs of $min_workers or more nodes.
INSERT INTO step_times_staged
WITH lines AS (
    SELECT l.job_id, j.instance, l.host, l.rank, l.task, l.step, l.log_time, l.step_seconds
    FROM job_log_lines l JOIN jobs j
      ON j.job_id = l.job_id AND len(j.nodes) >= $min_workers AND j.start_time IS NOT NULL
     AND (l.log_time IS NULL OR l.log_time BETWEEN j.start_time AND coalesce(j.end_time, 'infinity'::TIMESTAMP))
    -- a tqdm evaluation bar counts its own steps: the training bar's (the largest total) only
    WHERE l.step_seconds IS NOT NULL AND l.step IS NOT NULL
      AND (l.code NOT LIKE 'tqdm/%' OR l.code = (SELECT max_by(code, TRY_CAST(split_part(code, '/', 2) AS BIGINT))
                                                FROM job_log_lines t WHERE t.job_id = l.job_id AND t.code LIKE 'tqdm/%'))
    QUALIFY row_number() OVER (PARTITION BY l.file, l.line_no ORDER BY j.instance DESC) = 1
), rank_hosts AS (
    SELECT job_id, rank, min(host) AS host FROM job_log_lines
    WHERE kind IN ('nccl_init', 'rank_map') AND host IS NOT NULL AND rank IS NOT NULL GROUP BY job_id, rank
)
SELECT l.job_id, l.instance::BIGINT, coalesce(l.host, r.host, 'rank ' || l.rank, 'task ' || l.task) AS host,
       l.rank::BIGINT, l.step::BIGINT AS key, l.log_time AS time, l.step_seconds, NULL::DOUBLE AS bucket_s,
       'joblog' AS source
FROM lines l LEFT JOIN rank_hosts r ON r.job_id = l.job_id AND r.rank = l.rank
WHERE coalesce(l.host, r.host, CAST(l.rank AS VARCHAR), CAST(l.task AS VARCHAR)) IS NOT NULL
