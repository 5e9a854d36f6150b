-- classify_dropped (stage_classified_events), continued: the node_health XIDs and NVSwitch SXIDs ($twin_source)
-- that copy a kernel XID or SXID ($kept_source; NVSentinel's fallen-off-the-bus check is XID 79, as the kernel's
-- line is). NVSentinel's syslog-health-monitor (and gpud) read the kernel log that kernel/ holds, so
-- where an operator collects both, each XID line arrives twice: once as the line, once as a health event
-- stamped when the agent's poll read it (NVSentinel: generatedTimestamp = the time of its poll, every 15 s as
-- its Helm chart runs it, and the same XID may be reported more than once). The twin is the same host and code,
-- the same GPU when both name one by PCI address (bus:device; the domain and function are written differently),
-- within $twin_s seconds either way (dmesg -T times drift from the wall clock). The kernel line is kept: it is
-- the fault's own time and full text; the copies stay in node_events, only classification leaves them out.
-- Two XIDs from the same source are never merged here; a node_health XID no kernel line explains stays.
-- Twins from $scan_from on (NULL: all), their kernel lines from $twin_s before it. The join is on host, code and
-- the window-long time bucket (a kernel line offered to its bucket and the two beside it): a host's thousands of
-- the same XID over months meet only their neighbours, not each other.
INSERT INTO classify_dropped
WITH xids AS (
    SELECT rowid AS event_row, source, host, kind, code, event_time,
           floor(epoch(event_time) / greatest($twin_s, 1))::BIGINT AS bucket,
           nullif(regexp_extract(lower(device), '^(?:[0-9a-f]{4}:)?([0-9a-f]{2}:[0-9a-f]{2})(?:\.[0-7])?$', 1), '')
               AS pci
    FROM node_events
    WHERE kind IN ('xid', 'sxid') AND source IN ($kept_source, $twin_source) AND host IS NOT NULL
      AND event_time IS NOT NULL
      AND ($scan_from IS NULL OR event_time >= $scan_from::TIMESTAMP - to_seconds($twin_s))
), twins AS (
    SELECT * FROM xids WHERE source = $twin_source AND ($scan_from IS NULL OR event_time >= $scan_from)
)
SELECT t.event_row FROM twins t
SEMI JOIN (SELECT *, unnest([bucket - 1, bucket, bucket + 1]) AS near FROM xids WHERE source = $kept_source) k
  ON k.host = t.host AND k.kind = t.kind AND k.code = t.code AND k.near = t.bucket
 AND k.event_time BETWEEN t.event_time - to_seconds($twin_s) AND t.event_time + to_seconds($twin_s)
 AND (k.pci IS NULL OR t.pci IS NULL OR k.pci = t.pci)
