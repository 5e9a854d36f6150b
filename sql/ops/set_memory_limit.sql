SET memory_limit = $limit
