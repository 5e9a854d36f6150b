-- A step built (or an ingest ran, or a check ran): what it was built from and what it now holds.
INSERT OR REPLACE INTO asset_inputs SELECT $asset, $fingerprint, $output_version, $outcome, $built_at;
