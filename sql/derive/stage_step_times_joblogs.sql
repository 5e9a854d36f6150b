-- Step times from the jobs' own logs (appended to TEMP step_times_staged): the lines that carry a step's
-- duration (job_log_lines.step_seconds: torchtitan, Megatron, DeepSpeed, Hugging Face progress), placed on
-- the job instance running when they were printed; jobs of $min_workers or more nodes. The worker: the host
-- the line names; else the host the log last mapped its rank to above it in the same file (NCCL init /
-- rank map lines: a requeued job's log maps the same rank to other hosts); else by Slurm's block
-- distribution of the instance's ranks over its node list; else the rank (or srun task) itself.
-- position: the host's place in the node list.
INSERT INTO step_times_staged
WITH lines AS (
    SELECT l.job_id, j.instance, j.nodes, l.file, l.line_no, l.host, l.rank, l.task, l.step, l.log_time,
           l.step_seconds
    FROM job_log_lines l JOIN jobs j
      ON j.job_id = l.job_id AND len(j.nodes) >= $min_workers AND j.start_time IS NOT NULL
     AND (l.log_time IS NULL OR l.log_time BETWEEN j.start_time AND coalesce(j.end_time, 'infinity'::TIMESTAMP))
    -- a tqdm evaluation bar counts its own steps: the training bar's (the largest total) only
    WHERE l.step_seconds IS NOT NULL AND l.step IS NOT NULL
      AND (l.code NOT LIKE 'tqdm/%' OR l.code = (SELECT max_by(code, TRY_CAST(split_part(code, '/', 2) AS BIGINT))
                                                FROM job_log_lines t WHERE t.job_id = l.job_id AND t.code LIKE 'tqdm/%'))
    QUALIFY row_number() OVER (PARTITION BY l.file, l.line_no ORDER BY j.instance DESC) = 1
), maps AS (
    SELECT file, rank, line_no, host FROM job_log_lines
    WHERE kind IN ('nccl_init', 'rank_map') AND host IS NOT NULL AND rank IS NOT NULL
      AND file IN (SELECT DISTINCT file FROM lines)
), sizes AS (
    SELECT job_id, instance, max(rank) + 1 AS ranks FROM lines GROUP BY job_id, instance
), mapped AS (
    SELECT l.*, m.host AS map_host FROM lines l
    ASOF LEFT JOIN maps m ON m.file = l.file AND m.rank = l.rank AND l.line_no >= m.line_no
)
SELECT job_id, instance, host, rank, key, time, step_seconds, bucket_s, source,
       list_position(nodes, host)::BIGINT AS position
FROM (
SELECT l.job_id, l.instance::BIGINT AS instance, l.nodes,
       coalesce(CASE WHEN list_contains(l.nodes, l.host) THEN l.host END,
                CASE WHEN list_contains(l.nodes, split_part(l.host, '.', 1)) THEN split_part(l.host, '.', 1) END,
                CASE WHEN list_contains(l.nodes, l.map_host) THEN l.map_host END,
                CASE WHEN list_contains(l.nodes, split_part(l.map_host, '.', 1)) THEN split_part(l.map_host, '.', 1) END,
                CASE WHEN l.rank IS NOT NULL AND s.ranks >= len(l.nodes)
                     THEN l.nodes[(l.rank // ceil(s.ranks / len(l.nodes)))::BIGINT + 1] END,
                l.host, l.map_host, 'rank ' || l.rank, 'task ' || l.task) AS host,
       l.rank::BIGINT AS rank, l.step::BIGINT AS key, l.log_time AS time, l.step_seconds, NULL::DOUBLE AS bucket_s,
       'joblog' AS source
FROM mapped l JOIN sizes s USING (job_id, instance)
WHERE coalesce(l.host, l.map_host, CAST(l.rank AS VARCHAR), CAST(l.task AS VARCHAR)) IS NOT NULL
)
