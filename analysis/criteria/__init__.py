"""Benchmark criteria learned from the fleet (Anubis Validator; docs/methods.md#benchmark-criteria).

similarity: the CDF distance and Algorithm 2 on one metric's samples.
catalog: each metric's direction, unit and kind (measurement or pass/fail flag).
samples: one row per (run, host, metric, rank) from sql/criteria/samples.sql; the family matrices.
learn / verdicts / evaluation: criteria, the online check, and the baselines.
superbench: criteria.json, rules.yaml and baseline.json for validation runs.
"""
