-- The digest of sql/schema/warehouse.sql when it last ran on this warehouse (analysis.warehouse._ensure_schema).
SELECT digest FROM goodput_schema
