-- reason_texts (TEMP) from the texts staged by the caller (analysis.derive.attribution.classify_texts).
CREATE OR REPLACE TEMP TABLE reason_texts AS SELECT text, reason_words(text) AS words FROM staged_texts;
