SELECT health_check, first_seen FROM health_check_first_seen ORDER BY first_seen
