-- The decisions goodput took before $as_of: node_action_history's latest as-of before it (a backtest's older
-- as-of stored later is not "the previous decisions" of a newer one). No rows: no decision before $as_of.
SELECT host, as_of, action, cause, score, reason FROM node_action_history
WHERE as_of = (SELECT max(as_of) FROM node_action_history WHERE as_of < $as_of) ORDER BY host
