-- The validation plan in brief: nodes, benchmark runs and minutes, and the probability they remove.
SELECT count(DISTINCT host) AS nodes, count(*) AS runs, coalesce(sum(duration_min), 0) AS minutes,
       coalesce(sum(reduction), 0) AS expected_reduction
FROM validation_plan WHERE as_of = (SELECT max(as_of) FROM validation_plan)
