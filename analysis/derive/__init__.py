"""Derived tables built from the raw ones: jobs and runs, job-log events, the failure taxonomy and its
attribution, ETTR/MTTF and the fleet metrics. Set operations are in sql/derive/ and sql/metrics/; ``marks``
records what a build read so a nightly extends a table instead of rebuilding it."""
