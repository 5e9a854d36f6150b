"""One module per log format. Each is a Parser (analysis/ingest/contract.py): ``parse`` at least, and the
optional entry points for reading large files in pieces, Parquet, JSON documents and batches of small files."""
