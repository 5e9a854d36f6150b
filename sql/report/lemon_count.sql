-- The nodes scored at the latest lemon scoring and how many of them are lemons: the cluster report's lemon
-- table lists only the highest scores, the fleet report compares the counts.
SELECT count(*) AS scored, count(*) FILTER (WHERE is_lemon) AS lemons
FROM lemon_scores WHERE as_of = (SELECT max(as_of) FROM lemon_scores)
