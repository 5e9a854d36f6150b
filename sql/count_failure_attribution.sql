SELECT count(*) FROM failure_attribution
