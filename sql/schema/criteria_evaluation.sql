-- Per criteria version and benchmark: Algorithm 2 against the IQR and k-means baselines.
CREATE TABLE IF NOT EXISTS criteria_evaluation (
    version VARCHAR, "group" VARCHAR, benchmark VARCHAR, measured BIGINT, metrics BIGINT, repeatability DOUBLE, samples BIGINT,
    flagged_alg2 BIGINT, flagged_iqr BIGINT, flagged_kmeans BIGINT,
    margin_alg2 DOUBLE, margin_iqr DOUBLE, margin_kmeans DOUBLE,
    margin_metrics_alg2 BIGINT, margin_metrics_iqr BIGINT, margin_metrics_kmeans BIGINT
);
