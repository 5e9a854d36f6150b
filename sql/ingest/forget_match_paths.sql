-- Ingested files named by the arguments in staged_args(arg, candidate): the
-- candidate is the argument as given, absolute, or with symlinks resolved.
SELECT DISTINCT a.arg, f.path FROM staged_args a JOIN ingested_files f ON f.path = a.candidate
ORDER BY f.path
