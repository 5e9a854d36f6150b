-- A step that did not run to the end (it crashed, or a blocking check stopped it): it keeps its previous
-- contents, and the report and the run say so until it runs again.
INSERT OR REPLACE INTO withheld_steps
SELECT $step, $reason, $missing, $trace, now()::TIMESTAMP;
