-- goodput check: the first rows kubernetes/ produced, without the object's JSON, labels and conditions (long).
SELECT * EXCLUDE (file, raw, labels, conditions) FROM k8s_objects ORDER BY file, line_no LIMIT $n
