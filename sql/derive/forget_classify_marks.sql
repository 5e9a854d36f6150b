-- Forget the marks of earlier classified_events builds (analysis/derive/attribution.py classify_mark): the one of
-- this build is recorded next, and a mark of other statements or rules would only accumulate.
DELETE FROM derived_marks WHERE starts_with(step, 'classified_events ');
