-- The operator texts reason rule $rule_id matches, as written or with their words pulled apart: its pattern ($pattern) a parameter, compiled once.
INSERT INTO reason_hits SELECT $rule_id, $reason_order, text FROM reason_texts WHERE regexp_matches(text, $pattern) OR regexp_matches(words, $pattern);
