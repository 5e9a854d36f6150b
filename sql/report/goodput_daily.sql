SELECT day, goodput, productive_gpu_hours, lost_failure_gpu_hours, lost_preemption_gpu_hours FROM goodput_daily WHERE day <= $day ORDER BY day
