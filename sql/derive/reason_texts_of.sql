-- What the reason rules match (TEMP, this connection): reason_texts, each operator text staged as operator_texts
-- (by sql/derive/stage_reason_texts.sql, or a frame analysis.derive.attribution.classify_texts registers) with
-- its words pulled apart (sql/derive/reason_words_macro.sql); reason_hits, filled by match_reason_text.
CREATE OR REPLACE TEMP TABLE reason_hits (rule_id VARCHAR, reason_order INTEGER, text VARCHAR);
CREATE OR REPLACE TEMP TABLE reason_texts AS SELECT text, reason_words(text) AS words FROM operator_texts;
