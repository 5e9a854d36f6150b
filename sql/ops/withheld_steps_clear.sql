DELETE FROM withheld_steps WHERE step = $step
