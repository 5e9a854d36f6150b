-- kubernetes/: the object states of staged(uid, resource_version, deleted, own_file) that another file already
-- stored (analysis/ingest/parsers/kubernetes.py skips them). The file's own rows do not count: they are deleted
-- before it is read again, so re-reading a file stores what it stored before.
SELECT DISTINCT s.uid, s.resource_version, s.deleted
FROM staged s
JOIN k8s_objects k ON k.uid = s.uid AND k.resource_version IS NOT DISTINCT FROM s.resource_version
                  AND k.deleted = s.deleted AND k.file <> s.own_file
