"""Row count and an order-independent content hash of every table and view of a DuckDB warehouse.

Shows that a change keeps the demo's warehouse identical (issue 24): run the demo before and after it,
each into its own fresh folder, hash both warehouses and compare.

    python bench/table_hashes.py WAREHOUSE.duckdb             # a table: name, kind, rows, hash
    python bench/table_hashes.py WAREHOUSE.duckdb --json > A.json
    python bench/table_hashes.py --compare A.json B.json      # or two .duckdb files; exit 1 on a difference

A table's hash is the sum (mod 2^64) of DuckDB's hash() of each row, over its columns in name order: the
order of rows and columns does not matter, duplicated rows do. Columns in EXCLUDED are left out (they
differ between two runs of the same code); `columns` lists the rest with their types, so a renamed
column or a changed type shows as well. The demo stores the source's absolute paths (file columns,
ingested_files.path): the run's folder (--root, default the warehouse's folder) reads as <root> in every
text column, so two runs in two temp folders compare. The warehouse is opened read-only; the work is SQL.

The demo in a fresh folder (the warehouse, out/, saved models/ and DAGSTER_HOME all inside it):

    cd /tmp/run && DAGSTER_HOME=/tmp/run/dagster PYTHONPATH=<checkout> <venv>/bin/python -m pipelines demo \
        --db /tmp/run/demo.duckdb --out /tmp/run/out
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import duckdb

# Columns whose values differ between two runs of the same code on the same data: "column" (in every
# table) or "table.column". Keep this list short; each entry says why.
EXCLUDED = {
    "asset_inputs.fingerprint": "digest of goodput's code and of the upstream output_versions (build cache)",
    "asset_inputs.output_version": "a random uuid4 per build; an ingest's hashes the files' absolute paths",
    "asset_inputs.outcome": "a step's metadata: wall-clock times, CPU seconds, --out paths, JSON keys in set order",
    "asset_inputs.built_at": "wall-clock time of the step",
    "ingested_files.mtime_ns": "the simulated files are written at run time",
    "ingested_files.ingested_at": "wall-clock time of ingestion",
    "ingested_files.verified_at": "wall-clock time of ingestion",
    "derived_marks.ingested_through": "the newest ingested_at (wall clock)",
    "model_evaluation.trained_at": "wall-clock time of training",
    "node_action_history.built_at": "wall-clock time the node actions were built",
    "goodput_schema.digest": "sha256 of the schema's SQL text: a code-version digest (columns are compared apart)",
}


def _excluded(table: str, column: str) -> bool:
    return column in EXCLUDED or f"{table}.{column}" in EXCLUDED


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def table_hashes(db: str, root: str | None = None) -> dict[str, dict]:
    """{table: {kind, rows, hash, columns}}; ``root`` (a run's folder) reads as <root> in every text column."""
    con = duckdb.connect(db, read_only=True)
    try:
        tables = con.execute("SELECT table_name, table_type FROM information_schema.tables "
                             "WHERE table_schema = 'main' ORDER BY table_name").fetchall()
        result = {}
        for name, kind in tables:
            cols = con.execute("SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = "
                               "'main' AND table_name = ? ORDER BY ordinal_position", [name]).fetchall()
            kept = sorted((c, t) for c, t in cols if not _excluded(name, c))
            values = [f"replace({_quote(c)}, $root, '<root>')" if root and t == "VARCHAR" else _quote(c)
                      for c, t in kept]
            row = f"hash({', '.join(values)})" if kept else "0"
            rows, digest = con.execute(f"SELECT count(*), coalesce(sum({row}), 0) % 18446744073709551616 "
                                       f"FROM main.{_quote(name)}", {"root": root} if "$root" in row else {}).fetchone()
            result[name] = {"kind": "view" if kind == "VIEW" else "table", "rows": rows, "hash": f"{int(digest):016x}",
                            "columns": [f"{c} {t}" for c, t in cols if not _excluded(name, c)]}
        return result
    finally:
        con.close()


def _load(path: str) -> dict[str, dict]:
    if path.endswith(".json"):
        with open(path) as f:
            return json.load(f)
    return table_hashes(path, str(Path(path).resolve().parent))


def compare(a: dict[str, dict], b: dict[str, dict]) -> list[str]:
    """One line per difference between two table_hashes() results; none when they are identical."""
    lines = [f"only in A: {n}" for n in sorted(a.keys() - b.keys())]
    lines += [f"only in B: {n}" for n in sorted(b.keys() - a.keys())]
    for n in sorted(a.keys() & b.keys()):
        x, y = a[n], b[n]
        if x["columns"] != y["columns"]:
            lines.append(f"{n}: columns differ: only in A {sorted(set(x['columns']) - set(y['columns']))}, only in B "
                         f"{sorted(set(y['columns']) - set(x['columns']))}"
                         + (" (order only)" if sorted(x["columns"]) == sorted(y["columns"]) else ""))
        if (x["rows"], x["hash"]) != (y["rows"], y["hash"]):
            lines.append(f"{n}: rows {x['rows']} vs {y['rows']}, hash {x['hash']} vs {y['hash']}")
    return lines


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("db", nargs="?", help="DuckDB warehouse file")
    p.add_argument("--root", help="the run's folder (temp dir of the demo), replaced by <root> in text columns: "
                                   "the source's absolute paths [default: the warehouse's folder]")
    p.add_argument("--json", action="store_true", help="print JSON (the input of --compare)")
    p.add_argument("--compare", nargs=2, metavar=("A", "B"), help="two .json outputs (or .duckdb files) to compare")
    args = p.parse_args()
    if args.compare:
        a, b = map(_load, args.compare)
        diffs = compare(a, b)
        print("\n".join(diffs) if diffs else f"identical: {len(a)} tables and views (row counts and hashes)")
        return 1 if diffs else 0
    if not args.db:
        p.error("give a warehouse file, or --compare A B")
    hashes = table_hashes(args.db, args.root or str(Path(args.db).resolve().parent))
    if args.json:
        print(json.dumps(hashes, indent=1, sort_keys=True))
    else:
        for n, h in hashes.items():
            print(f"{n:40} {h['kind']:5} {h['rows']:>10} {h['hash']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
