-- Which benchmarks to run on which nodes per as_of, and the incident probability each removes (analysis.nodes.selector).
CREATE TABLE IF NOT EXISTS validation_plan (
    host VARCHAR, as_of TIMESTAMP, step INTEGER, benchmark VARCHAR, duration_min DOUBLE,
    p_before DOUBLE, p_after DOUBLE, reduction DOUBLE
);
