-- The version of one source folder's ingested files ($source NULL: files in no known folder). It changes when a
-- file is added, re-read with other content or options, read differently, or forgotten. Order-free aggregates of
-- a row hash: one scan of the source's ingested_files rows, however many files it has.
SELECT count(*) || ':' || coalesce(bit_xor(h), 0) || ':' || coalesce(sum(h::HUGEINT), 0)
FROM (SELECT hash(path, sha256, fingerprint, format, host_hint, status, rows, rejects, lines) AS h
      FROM ingested_files WHERE source IS NOT DISTINCT FROM $source);
