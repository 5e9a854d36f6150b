-- The criteria each criteria run learned (analysis.criteria.run), by version; the latest version is in force.
CREATE TABLE IF NOT EXISTS benchmark_criteria (
    version VARCHAR, trained_from TIMESTAMP, trained_to TIMESTAMP, "group" VARCHAR, benchmark VARCHAR, metric VARCHAR,
    kind VARCHAR, direction VARCHAR, unit VARCHAR, guessed_direction BOOLEAN, status VARCHAR, reason VARCHAR,
    criterion DOUBLE[], criterion_value DOUBLE, alpha DOUBLE, threshold DOUBLE, pass_value DOUBLE,
    n_samples BIGINT, n_hosts BIGINT, n_dropped BIGINT, repeatability DOUBLE, sigma DOUBLE
);
