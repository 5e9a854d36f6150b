SELECT gpus, projected_mttf_hours FROM mttf_projection ORDER BY gpus
