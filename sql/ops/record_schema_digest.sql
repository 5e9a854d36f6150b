-- Remember which sql/schema/warehouse.sql this warehouse was created or migrated with.
CREATE TABLE IF NOT EXISTS goodput_schema (digest VARCHAR);
DELETE FROM goodput_schema;
INSERT INTO goodput_schema VALUES ($digest);
