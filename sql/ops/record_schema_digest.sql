-- Remember which sql/schema/warehouse.sql this warehouse was created or migrated with.
DELETE FROM goodput_schema;
INSERT INTO goodput_schema VALUES ($digest);
