-- hardware_incidents (TEMP): the confirmed hardware incidents of the $offender_days before $as_of that repeat
-- offenders are counted from: a GPU, host or network part (taxonomy_causes), from incidents_as_of (an
-- operator's drain reason or ticket counts when no machine line explains it), and confirmed: it took the
-- node out of service, a ticket was opened for it, or a job failure was blamed on it. An alarming line that
-- nothing followed is watched (node_actions), not counted: a GPU's one-off XID is no pattern.
CREATE OR REPLACE TEMP TABLE hardware_incidents AS
SELECT i.host, i.incident_id, i.first_event, i.cause, coalesce(c.label, i.cause) AS label
FROM incidents_as_of i JOIN taxonomy_causes c USING (cause)
WHERE c.domain IN ('hardware', 'network') AND c.component IN ('GPU', 'Host', 'Network')
  AND i.first_event >= $as_of - to_days($offender_days) AND i.first_event < $as_of
  AND (i.drained OR i.ticket_id IS NOT NULL
       OR EXISTS (SELECT 1 FROM failure_attribution a
                  WHERE a.is_primary AND a.host = i.host AND a.end_time + to_seconds($after_s) < $as_of
                    AND a.event_time BETWEEN i.first_event AND i.last_event))
