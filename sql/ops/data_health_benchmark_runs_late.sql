-- Validation runs the latest node actions cannot see: their results carry no time, so their files'
-- modification time dates them (benchmark_runs(), sql/schema/warehouse.sql), and that falls on or after the as-of
-- of the node actions, which read only runs before it (sql/models/build_node_actions.sql). A copy that did not
-- keep modification times dates such runs on the day of the copy: every verdict of theirs is ignored.
WITH as_of AS (
    SELECT coalesce((SELECT max(as_of) FROM node_actions), (SELECT max(as_of) FROM lemon_scores)) AS t
), late AS (
    SELECT r.run_id, r.run_time FROM benchmark_runs() r, as_of WHERE r.dated_by_mtime AND r.run_time >= as_of.t
)
SELECT (SELECT t FROM as_of) AS as_of, count(*) AS runs, list(run_id ORDER BY run_id)[1:3] AS examples,
       min(run_time) AS first_time,
       (SELECT count(DISTINCT host) FROM benchmark_verdicts
        WHERE verdict = 'fail' AND run_id IN (SELECT run_id FROM late)) AS failed_nodes
FROM late
