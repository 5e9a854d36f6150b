-- Forget the marks of earlier failure_attribution builds (analysis/derive/attribution.py attribution_mark): the
-- one of this build is recorded next, and a mark of other statements or windows would only accumulate.
DELETE FROM derived_marks WHERE starts_with(step, 'failure_attribution ');
