-- One job's telemetry: its hosts' samples within its run.
SELECT time, host, metric, value FROM telemetry
WHERE list_contains($hosts, host) AND time >= $start AND time <= $end
