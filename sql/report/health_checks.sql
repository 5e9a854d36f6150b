SELECT health_check, first_seen FROM health_check_first_seen WHERE introduced AND first_seen <= $day::TIMESTAMP + INTERVAL 1 DAY ORDER BY first_seen
