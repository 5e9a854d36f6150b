-- Forget what every step was built from: the next run rebuilds everything (`goodput run --rebuild`).
DELETE FROM asset_inputs;
