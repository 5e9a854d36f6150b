-- The last day any source has data on (possibly partial): the one-shot run reports on it. Jobs, node states,
-- kernel, switch and health logs, tickets, benchmarks and telemetry all count (source_spans): a node history
-- that runs on after the last job is judged to its end.
SELECT max(last_time)::DATE FROM source_spans
