-- `goodput why HOST`: its times out of service, latest first, with Slurm's reason in the operator's words.
SELECT o.time_start, o.time_end, o.still_out, o.hours, o.state, o.reason, o.cause, c.label, o.planned, o.ticket_id,
       o.first_record
FROM node_outages o LEFT JOIN taxonomy_causes c USING (cause)
WHERE o.host = $host ORDER BY o.time_start DESC LIMIT $n
