-- What every step was last built from, its output version and outcome: read once per run.
SELECT asset, fingerprint, output_version, outcome, built_at FROM asset_inputs;
