-- What the blocklist would do: every node with an action, the strongest first.
SELECT host, action, reason, cause, score, since, expires FROM node_actions
ORDER BY CASE action WHEN 'drain_now' THEN 0 WHEN 'drain_after_job' THEN 1 ELSE 2 END, score DESC, host
