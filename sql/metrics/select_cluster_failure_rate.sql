SELECT * EXCLUDE (as_of) FROM cluster_failure_rate  -- the rates (as_of: the day they are counted up to)
