"""The benchmark catalogs (metrics, validation benchmarks): package data, read through analysis.package_files."""
