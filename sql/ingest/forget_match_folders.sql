-- Ingested files below the folders in staged_args(arg, candidate).
SELECT DISTINCT a.arg, f.path FROM staged_args a JOIN ingested_files f ON starts_with(f.path, a.candidate || '/')
ORDER BY f.path
