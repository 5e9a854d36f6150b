CREATE OR REPLACE TABLE ettr_parameters AS SELECT * FROM staged_ettr_parameters;
