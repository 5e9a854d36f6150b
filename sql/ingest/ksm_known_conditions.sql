-- node_health/ (kube-state-metrics conditions and cordons, analysis/ingest/parsers/ksm.py): the condition changes
-- other files stored for staged(host, code, since, until, own_file): the latest one at or before since (what was
-- known before the file's first sample) and those after it up to until. The file's own rows do not count: they
-- are deleted before it is read again. A change back to normal: health_ok, or uncordon (code 'unschedulable').
SELECT n.host, n.code, n.event_time, n.kind NOT IN ('health_ok', 'uncordon') AS problem
FROM node_events n
JOIN staged s ON n.host = s.host AND n.code = s.code
WHERE n.source = 'node_health' AND n.reporter = 'kube-state-metrics' AND n.file <> s.own_file
  AND n.event_time <= s.until
QUALIFY n.event_time > s.since
     OR n.event_time = max(CASE WHEN n.event_time <= s.since THEN n.event_time END) OVER (PARTITION BY n.host, n.code)
