-- Operator texts (drain and down reasons, tickets, failing health checks) no reason rule classified
-- (unclassified_reasons), the $limit seen most; texts and text_events: all of them.
SELECT source, text, events, hosts, first_seen, last_seen,
       (SELECT count(DISTINCT text) FROM unclassified_reasons) AS texts,
       (SELECT sum(events) FROM unclassified_reasons)::BIGINT AS text_events
FROM unclassified_reasons
ORDER BY events DESC, hosts DESC, text, source
LIMIT $limit
