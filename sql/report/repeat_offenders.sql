-- The repeat offenders of the latest scoring (repeat_offenders, written by the node models), the top cause in words:
-- those to send back (RMA) first, then by incidents.
SELECT r.host, r.as_of, r.window_days, r.incidents, r.threshold, r.fleet_rate, r.top_cause,
       coalesce(c.label, r.top_cause) AS top_cause_label, r.top_cause_incidents, r.hours_out, r.median_gap_days,
       r.first_incident, r.last_incident, r.escalation, r.reason
FROM repeat_offenders r LEFT JOIN taxonomy_causes c ON c.cause = r.top_cause
WHERE r.as_of = (SELECT max(as_of) FROM repeat_offenders)
ORDER BY r.escalation = 'rma' DESC, r.incidents DESC, r.host
