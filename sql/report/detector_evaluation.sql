-- The detectors side by side (detector_evaluation), Minder first.
SELECT * FROM detector_evaluation
ORDER BY CASE method WHEN 'minder' THEN 0 WHEN 'minder_nc' THEN 1 WHEN 'raw' THEN 2 WHEN 'con' THEN 3
                     WHEN 'int' THEN 4 WHEN 'md' THEN 5 ELSE 6 END
