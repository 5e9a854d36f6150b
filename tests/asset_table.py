"""The asset table of docs/architecture.md, generated from the reviewed asset-graph snapshot
(tests/fixtures/asset_graph.json) and the source registry, so it cannot drift from the graph:
`python -m tests.asset_table` rewrites it between its markers (after `python -m tests.test_asset_graph`);
tests/test_architecture_doc.py fails while it differs."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from analysis.sources import SOURCES

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "architecture.md"
SNAPSHOT = REPO / "tests" / "fixtures" / "asset_graph.json"
BEGIN = "<!-- asset table: generated from tests/fixtures/asset_graph.json by `python -m tests.asset_table` -->"
END = "<!-- end of the asset table -->"
GROUPS = ("ingest", "slurm", "events", "telemetry", "attribution", "metrics", "models", "nightly")  # the flow's order
# what an asset writes beside tables (files under the run's --out): not in the graph
FILES = {"criteria_exports": "`OUT/exports/criteria/`", "node_exports": "`OUT/exports/`",
         "reliability_report": "`OUT/reports/reliability-DAY.html`, `latest.html`"}
UNRECOGNISED = "unrecognised_files"


def _names(names) -> str:
    return ", ".join(f"`{n}`" for n in names) or "-"


def table(snapshot: dict | None = None) -> str:
    graph = snapshot if snapshot is not None else json.loads(SNAPSHOT.read_text())
    folder_of = {s.asset: s.folder for s in SOURCES.values()}
    rows = ["| group | asset | upstream | writes | checks |", "|---|---|---|---|---|"]
    order = {g: i for i, g in enumerate(GROUPS)}
    for name, node in sorted(graph.items(), key=lambda kv: (order.get(kv[1]["group"], len(GROUPS)), kv[0])):
        asset = f"`{name}`" + (" (daily partition)" if node["partitioned"] else "")
        if name in folder_of:
            upstream = f"the files under `{folder_of[name]}/`"
        elif name == UNRECOGNISED:
            upstream = "files in folders no source reads"
        else:
            upstream = _names(node["deps"])
        writes = ", ".join(filter(None, [_names(node["tables"]) if node["tables"] else "", FILES.get(name, "")])) or "-"
        checks = ", ".join(f"`{c}`" + (" (blocking)" if kind == "blocking" else "")
                           for c, kind in sorted(node["checks"].items())) or "-"
        rows.append(f"| {node['group']} | {asset} | {upstream} | {writes} | {checks} |")
    return "\n".join(rows) + "\n"


def documented(text: str) -> str:
    """The table between the markers of ``text``."""
    match = re.search(re.escape(BEGIN) + r"\n(.*?)" + re.escape(END), text, re.S)
    if not match:
        raise ValueError(f"{DOC}: no asset table between its markers")
    return match[1]


def rewrite(text: str, new_table: str) -> str:
    documented(text)
    return re.sub(re.escape(BEGIN) + r"\n.*?" + re.escape(END), lambda _: f"{BEGIN}\n{new_table}{END}", text,
                  flags=re.S)


if __name__ == "__main__":  # rewrite the doc's table (outside pytest: a test run must not write into the checkout)
    DOC.write_text(rewrite(DOC.read_text(), table()))
    print(f"wrote the asset table of {DOC}", file=sys.stderr)
