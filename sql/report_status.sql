SELECT state, instances, instance_share, gpu_hours, gpu_hour_share FROM job_status_breakdown
