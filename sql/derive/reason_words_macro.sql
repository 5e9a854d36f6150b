-- A text with its words pulled apart for the reason rules: underscores to spaces and CamelCase split
-- (check_fs_mount -> "check fs mount", XfsHasShutdown -> "Xfs Has Shutdown", SysLogsSXIDError -> "Sys Logs SXID Error"),
-- so a rule's word boundaries find the words of a check name or a Kubernetes condition.
CREATE OR REPLACE TEMP MACRO reason_words(t) AS
    replace(regexp_replace(regexp_replace(t, '([a-z0-9])([A-Z])', '\1 \2', 'g'), '([A-Z]+)([A-Z][a-z])', '\1 \2', 'g'), '_', ' ');
