SELECT job_id, instance, state, start_time, end_time, nodes FROM jobs WHERE job_id = $job_id ORDER BY instance
