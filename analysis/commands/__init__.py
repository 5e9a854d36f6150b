"""Support for the command line and the run's outcome, with no Dagster or click in it: checks before a run
(``preflight``), what went wrong (``diagnose``, ``data_health``), `goodput sql` (``readonly``, ``values``) and
`goodput why` (``explain``)."""
