-- Each day's goodput and scheduled GPU-hours up to $day (goodput_daily): the headline marks warm-up and partial
-- days and compares full periods only (reports/headline.py).
SELECT day, goodput, scheduled_gpu_hours FROM goodput_daily WHERE day <= $day ORDER BY day
