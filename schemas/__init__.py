"""JSON schemas of the exports: package data, read through analysis.package_files."""
