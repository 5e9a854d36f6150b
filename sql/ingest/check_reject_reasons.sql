-- goodput check: a source's reject reasons (quoted values folded, so one reason is one row), with a count
-- and the first example (file:line: raw).
SELECT regexp_replace(reason, '''[^'']*''', '''...''', 'g') AS reason, count(*) AS lines,
       arg_min(file || ':' || coalesce(line_no::VARCHAR, '-') || ': ' || coalesce(left(raw, 120), ''),
               coalesce(line_no, 0)) AS example
FROM rejects WHERE source = $source GROUP BY 1 ORDER BY lines DESC, reason LIMIT 5
