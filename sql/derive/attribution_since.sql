-- The first day whose judged instances differ from those failure_attribution was built from, the first whose
-- classified events do (NULL: none), and whether the events without a time do (then every instance is judged again).
SELECT min(coalesce(n.day, k.day)) FILTER (WHERE coalesce(n.kind, k.kind) = 'jobs'),
       min(coalesce(n.day, k.day)) FILTER (WHERE coalesce(n.kind, k.kind) = 'events'),
       coalesce(bool_or(n.day IS NULL AND k.day IS NULL), FALSE)
FROM attributed_days_now n FULL JOIN attributed_days k ON n.kind = k.kind AND n.day IS NOT DISTINCT FROM k.day
WHERE n.n IS DISTINCT FROM k.n OR n.digest IS DISTINCT FROM k.digest
