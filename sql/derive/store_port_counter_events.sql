-- Port counter deltas with errors (port_counter_deltas, replaced each run) and the deltas over the
-- thresholds as node events (source network), replacing those of the previous run.
CREATE OR REPLACE TABLE port_counter_deltas AS SELECT * FROM staged_deltas;
DELETE FROM node_events WHERE source = 'network' AND file = 'goodput:network-counters';
INSERT INTO node_events BY NAME SELECT * FROM staged_port_events;
