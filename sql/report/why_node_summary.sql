-- `goodput why HOST`: the node's availability over the whole data span (node_availability).
SELECT a.*, s.first_day, s.last_day
FROM node_availability a, (SELECT min(first_time)::DATE AS first_day, max(last_time)::DATE AS last_day FROM source_spans) s
WHERE a.host = $host
