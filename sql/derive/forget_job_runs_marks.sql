-- Forget the marks of earlier job_runs builds (analysis/derive/attribution.py runs_mark): the one of this build
-- is recorded next, and a mark of other statements or settings would only accumulate.
DELETE FROM derived_marks WHERE starts_with(step, 'job_runs ');
