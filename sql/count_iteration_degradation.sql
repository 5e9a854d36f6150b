SELECT count(*) FROM iteration_degradation
