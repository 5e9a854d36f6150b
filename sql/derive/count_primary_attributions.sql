SELECT count(*) FROM failure_attribution WHERE is_primary
