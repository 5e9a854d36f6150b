-- The nodes that score highest as lemons at the latest as_of, with the signals behind each score.
SELECT host, score, is_lemon, array_to_string(top_signals, ', ') AS signals, suggested_component, method,
       meta_is_lemon, as_of
FROM lemon_scores WHERE as_of = (SELECT max(as_of) FROM lemon_scores)
ORDER BY is_lemon DESC, score DESC, host LIMIT 15
