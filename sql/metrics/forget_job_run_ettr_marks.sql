-- Forget the marks of earlier job_run_ettr builds (analysis/derive/metrics.py ettr_mark): the one of this build is
-- recorded next, and a mark of other statements or settings would only accumulate.
DELETE FROM derived_marks WHERE starts_with(step, 'job_run_ettr ');
