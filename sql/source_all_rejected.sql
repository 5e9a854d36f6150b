-- Files of a source in which every line that was not blank or a header was
-- rejected: the source is unreadable as configured (a wrong delimiter, a wrong
-- time zone name, a format we do not read).
SELECT path, lines, rejects FROM ingested_files
WHERE source = $source AND status = 'ok' AND row_lines = 0 AND rejects > 0
ORDER BY path
