"""The truth table of telemetry faults: what the simulator writes (truth/telemetry_faults.csv) and
what the detectors are judged against (attribution stands in for it on a real cluster)."""
import polars as pl

TRUTH_SCHEMA = {"job_id": pl.Utf8, "host": pl.Utf8, "kind": pl.Utf8, "fault_type": pl.Utf8, "metrics": pl.Utf8,
                "start": pl.Datetime("us"), "end": pl.Datetime("us")}
