DELETE FROM daily_source_volume WHERE day = $day;
INSERT INTO daily_source_volume SELECT $day::DATE, source, rows FROM staged_volume;
