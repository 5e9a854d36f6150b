-- Forget what the staged steps (and their checks, 'asset:check') were built from: the next run rebuilds them.
DELETE FROM asset_inputs
WHERE asset IN (SELECT asset FROM staged_assets)
   OR split_part(asset, ':', 1) IN (SELECT asset FROM staged_assets);
