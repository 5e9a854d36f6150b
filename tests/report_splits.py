"""The report's splits as printed (issue 34): every element carrying ``data-split`` and ``data-whole`` holds parts
(its child elements carrying ``data-share``, not their descendants) that add up to the whole at the printed
precision. Shared by the report tests."""
from __future__ import annotations

from html.parser import HTMLParser

VOID = {"br", "img", "hr", "meta", "link", "input", "col", "area", "base", "source", "wbr"}


class _Splits(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.stack: list[dict] = []
        self.splits: list[dict] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if self.stack and "data-share" in a:
            parent = self.stack[-1]
            parent["parts"].append(float(a["data-share"]))
        node = {"tag": tag, "parts": [], "split": a.get("data-split"), "whole": a.get("data-whole")}
        if node["split"] is not None and node["whole"] is not None:
            self.splits.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_endtag(self, tag):
        while self.stack:
            if self.stack.pop()["tag"] == tag:
                break


def splits(html: str) -> list[dict]:
    """Every split on the page: name, whole, parts (as printed)."""
    p = _Splits()
    p.feed(html)
    return [{"split": s["split"], "whole": float(s["whole"]), "parts": s["parts"]} for s in p.splits]


def assert_splits_add_up(html: str, expected: set[str]) -> None:
    found = splits(html)
    assert expected <= {s["split"] for s in found}, found
    for s in found:
        assert len(s["parts"]) >= 2, s
        assert round(sum(s["parts"]), 1) == round(s["whole"], 1), s
