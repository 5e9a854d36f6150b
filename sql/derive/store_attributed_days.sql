-- attributed_days: the days of instances and events this build judged from (attributed_days_now).
DELETE FROM attributed_days;
INSERT INTO attributed_days SELECT * FROM attributed_days_now ORDER BY kind, day;
DROP TABLE attributed_days_now;
