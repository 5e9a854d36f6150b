"""The failure taxonomy (rules.yaml, xids.yaml): package data, read through analysis.package_files."""
