-- goodput check: the hosts a source's rows name. A result of several nodes names them comma-joined
-- (nccl-tests across nodes, analysis/ingest/parsers/nccl_tests.py): each is a host.
SELECT DISTINCT trim(h) AS host FROM (SELECT unnest(string_split(host, ',')) AS h FROM query_table($table)
                                      WHERE host IS NOT NULL)
WHERE trim(h) <> ''
