-- bench/derived_steps.py: step $step marked as built from the files of $sources ingested up to $through,
-- as the nightly after them finds it.
UPDATE derived_marks SET files = (SELECT count(*) FROM ingested_files
                                  WHERE list_contains($sources, source) AND status = 'ok' AND ingested_at <= $through),
                         ingested_through = (SELECT max(ingested_at) FROM ingested_files
                                  WHERE list_contains($sources, source) AND status = 'ok' AND ingested_at <= $through)
WHERE step = $step
