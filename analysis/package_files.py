"""Where the files goodput ships live: the only module that knows.

The data folders are packages of their own (``sql``, ``taxonomy``, ``catalog``, ``schemas``, ``samples``; the
report's template is in ``reports/templates``), found with importlib.resources, so a checkout and an installed wheel read the same way, and no code climbs from its own
file to a repository root (an installed wheel has none).
"""
from __future__ import annotations

from importlib.resources import files
from pathlib import Path

# goodput's code and the data files that ship with it (taxonomy rules, benchmark catalogs, report template):
# what fingerprints.code_version hashes. The demo's sample is input data, versioned as any source file is.
CODE_PACKAGES = ("analysis", "assets", "pipelines", "reports", "sql", "taxonomy", "catalog", "schemas")


def path(package: str, *parts: str) -> Path:
    """A file or folder of ``package`` as a path on disk. Callers read folders (the taxonomy, the demo's
    sample) and name files in their messages, so a path is required: pip installs wheels unzipped, and a
    zipped import is refused here with a clear message rather than failing later on a missing file."""
    found = files(package).joinpath(*parts)
    if not isinstance(found, Path):
        raise RuntimeError(f"goodput's data files must be installed on disk, not zipped: {found}")
    return found


def sql_dir() -> Path:
    return path("sql")


def taxonomy_dir() -> Path:
    return path("taxonomy")


def catalog(name: str) -> Path:
    """A benchmark catalog shipped in catalog/ (benchmark_metrics.yaml, validation_benchmarks.yaml)."""
    return path("catalog", name)


def schema(name: str) -> Path:
    """A JSON schema shipped in schemas/."""
    return path("schemas", name)


def demo_source() -> Path:
    """The hand-made source directory `goodput demo --sample` runs on (and Dagster's default source)."""
    return path("samples", "demo_source")
