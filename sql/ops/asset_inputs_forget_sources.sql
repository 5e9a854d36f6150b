-- Files were forgotten: drop the ingest steps' records, so the next run computes each source's version again.
DELETE FROM asset_inputs WHERE starts_with(fingerprint, $prefix);
