-- The fleet's rate of confirmed hardware incidents over the repeat-offender window (hardware_incidents, staged
-- for $as_of): the incidents, and the nodes at risk before $as_of (node_population) they are spread over.
SELECT (SELECT count(*) FROM hardware_incidents) AS incidents,
       (SELECT count(*) FROM node_population WHERE first_seen < $as_of) AS nodes
