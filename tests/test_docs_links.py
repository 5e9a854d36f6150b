"""The docs hold together: every link between README.md and the pages of docs/ reaches a page and a heading that
exist, every `docs/<page>.md#<anchor>` the code cites exists, and no method is cited from a file outside the
repository (the specification the code once cited by section number is not in it: docs/methods.md is)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.docs_commands import REPO

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
# where code and docs that cite the pages live (tests/fixtures hold other projects' files, as they come)
CITING = ("analysis", "assets", "pipelines", "reports", "sql", "taxonomy", "catalog", "schemas", "samples", "bench",
          "tests", "docs")
SUFFIXES = {".py", ".sql", ".yaml", ".yml", ".md", ".j2", ".html"}
CITATION = re.compile(r"docs/([\w-]+\.md)(?:#([\w-]+))?")
OUTSIDE = re.compile(r"SPEC(?:\.md|\s*§)|papers/[\w-]+")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped (code marks too), blanks to hyphens."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)  # a `# comment` in a code block is no heading
    seen: dict[str, int] = {}
    out = set()
    for heading in re.findall(r"^#{1,6} (.+)$", text, re.M):
        slug = _slug(heading)
        out.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
        seen[slug] = seen.get(slug, 0) + 1
    return out


def _citing_files() -> list[Path]:
    files = [REPO / "README.md"]
    for top in CITING:
        files += [p for p in (REPO / top).rglob("*") if p.suffix in SUFFIXES and p.is_file()
                  and "fixtures" not in p.relative_to(REPO).parts]
    return files


def test_slugs_follow_github():
    assert _slug("Exit codes") == "exit-codes"
    assert _slug("slurm/: accounting (required)") == "slurm-accounting-required"
    assert _slug("goodput.yaml") == "goodputyaml"
    assert _slug("Links (C4)") == "links-c4"


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_links_between_pages_reach_a_heading(page):
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue  # http(s), mailto: not ours to check
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        assert dest.exists(), f"{page.name}: link to {target}: no such file"
        if anchor:
            assert anchor in _anchors(dest), f"{page.name}: link to {target}: {dest.name} has no heading #{anchor}"


def test_every_docs_anchor_the_code_cites_exists():
    cited = 0
    for path in _citing_files():
        for page, anchor in CITATION.findall(path.read_text(errors="replace")):
            dest = REPO / "docs" / page
            where = path.relative_to(REPO)
            assert dest.is_file(), f"{where} cites docs/{page}: no such page"
            assert not anchor or anchor in _anchors(dest), f"{where} cites docs/{page}#{anchor}: no such heading"
            cited += 1
    assert cited >= 5  # the citations were found


def test_methods_are_cited_from_the_repository():
    for path in _citing_files():
        for line_no, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            assert not OUTSIDE.search(line), f"{path.relative_to(REPO)}:{line_no} cites a file outside the repository"


def test_methods_page_names_every_paper_it_cites():
    text = (REPO / "docs" / "methods.md").read_text()
    for title in ("Revisiting Reliability in Large-Scale Machine Learning Research Clusters",
                  "Anubis: Towards Reliable Cloud AI Infrastructure via Proactive Validation",
                  "Minder: Faulty Machine Detection for Large-scale Distributed Model Training",
                  "Evolution of Aegis: Fault Diagnosis for AI Model Training Service in Production",
                  "Boosting Large-scale Parallel Training Efficiency with C4"):
        assert title in text, title
