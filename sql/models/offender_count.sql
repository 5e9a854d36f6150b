-- Repeat offenders found as of $as_of.
SELECT count(*) FROM repeat_offenders WHERE as_of = $as_of
