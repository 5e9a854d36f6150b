-- A nightly's new port counter deltas with errors, and its new port events (all newer than the stored ones).
INSERT INTO port_counter_deltas BY NAME SELECT * FROM staged_deltas;
INSERT INTO node_events BY NAME SELECT * FROM staged_port_events;
