-- repeat_offenders: nodes whose own history holds repeated hardware faults in the $offender_days before
-- $as_of, whether or not a job failed: at least $min_incidents confirmed hardware incidents
-- (sql/models/stage_hardware_incidents.sql). $min_incidents is the fewest a node would reach by chance at the fleet's own
-- rate with probability under offender_p (a Poisson tail, analysis/nodes/offenders.py), never under
-- offender_min. escalation: rma when one cause (one component) came back $rma_repeats times or more
-- (repairs did not hold), else repair. One row per node and as-of; the rows of this as-of are replaced.
DELETE FROM repeat_offenders WHERE as_of = $as_of;
INSERT INTO repeat_offenders
WITH hw AS (
    SELECT * FROM hardware_incidents
), per_cause AS (
    SELECT host, cause, any_value(label) AS label, count(*) AS n FROM hw GROUP BY host, cause
), gaps AS (
    SELECT host, date_diff('second', lag(first_event) OVER (PARTITION BY host ORDER BY first_event), first_event) / 86400.0 AS gap
    FROM hw
), out AS (
    SELECT host, sum(date_diff('second', greatest(time_start, $as_of - to_days($offender_days)),
                              least(coalesce(time_end, $as_of), $as_of)) / 3600.0) AS hours_out
    FROM node_outages
    WHERE NOT planned AND time_start < $as_of AND coalesce(time_end, $as_of) > $as_of - to_days($offender_days)
    GROUP BY host
), per_host AS (
    SELECT h.host, count(*) AS incidents, min(h.first_event) AS first_incident, max(h.first_event) AS last_incident
    FROM hw h GROUP BY h.host HAVING count(*) >= $min_incidents
)
SELECT p.host, $as_of::TIMESTAMP, $offender_days, p.incidents, $min_incidents, $fleet_rate,
       (SELECT list(label || ' x' || n ORDER BY n DESC, cause) FROM per_cause c WHERE c.host = p.host),
       t.cause, t.n, coalesce(o.hours_out, 0), (SELECT median(gap) FROM gaps g WHERE g.host = p.host AND gap IS NOT NULL),
       p.first_incident, p.last_incident,
       CASE WHEN t.n >= $rma_repeats THEN 'rma' ELSE 'repair' END,
       'repeat offender: ' || p.incidents || ' hardware incidents in ' || $offender_days || ' days ('
       || (SELECT array_to_string(list(label || ' x' || n ORDER BY n DESC, cause)[1:3], ', ') FROM per_cause c WHERE c.host = p.host)
       || '; the fleet averages ' || printf('%.2f', $fleet_rate) || ' a node, ' || $min_incidents || ' or more is not chance), '
       || printf('%.0f', coalesce(o.hours_out, 0)) || ' h out of service'
       || CASE WHEN t.n >= $rma_repeats THEN ': ' || t.label || ' failed ' || t.n || ' times, RMA it'
               ELSE ': repair and validate' END
FROM per_host p
JOIN (SELECT host, first(cause ORDER BY n DESC, cause) AS cause, max(n) AS n, first(label ORDER BY n DESC, cause) AS label
      FROM per_cause GROUP BY host) t USING (host)
LEFT JOIN out o USING (host);
