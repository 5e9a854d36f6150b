-- Steps withheld now: each keeps its previous contents until it runs to the end again.
SELECT step, reason, missing, trace, since FROM withheld_steps ORDER BY step
