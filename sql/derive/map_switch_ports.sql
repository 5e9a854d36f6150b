-- Switch events are about the compute host cabled to the port that logged them.
-- Re-run after every ingest so a corrected cabling map re-maps old events.
UPDATE node_events e SET host = (
    SELECT min(t.host) FROM topology t
    WHERE t.port_key = e.device AND lower(t.switch) = lower(e.reporter))
WHERE e.source = 'switch';
