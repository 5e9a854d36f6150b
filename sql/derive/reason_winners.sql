-- reason_winners (TEMP): for each operator text some reason rule matched, the first rule in the list's order.
CREATE OR REPLACE TEMP TABLE reason_winners AS
SELECT text, arg_min(rule_id, reason_order) AS rule_id FROM reason_hits GROUP BY text;
