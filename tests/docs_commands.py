"""The commands README.md and the pages of docs/ give, taken apart the way a shell would (for
tests/test_docs_commands.py): code blocks (sh, cron lines, systemd ExecStart=) and inline `spans` that
start with a known tool, split into simple commands with their words."""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOCS = (REPO / "README.md", *sorted((REPO / "docs").glob("*.md")))  # a page without commands adds none
SHELL_BLOCKS = ("sh", "cron", "ini")  # the other blocks are YAML and CSV examples
CRON_FIELDS = 5
ALT = "\x00"  # stands for a `|` between choices while a prose span is split into commands


@dataclass(frozen=True)
class Command:
    doc: str  # README.md or docs/<page>.md
    text: str  # the line or span as written
    words: tuple[str, ...]  # one simple command: the tool, then its arguments (quotes removed)
    in_block: bool  # from a code block (a full command) or prose (a fragment or a synopsis)

    @property
    def tool(self) -> str:
        return Path(self.words[0]).name

    @property
    def synopsis(self) -> bool:
        return not self.in_block and ("[" in self.text or "..." in self.text)


def block_lines(text: str) -> list[str]:
    """Each command line of the shell-like code blocks, continuation lines joined, comments dropped."""
    lines = []
    for lang, body in re.findall(r"```(\w*)\n(.*?)```", text, re.S):
        if lang not in SHELL_BLOCKS:
            continue
        for line in re.sub(r"\\\n\s*", " ", body).splitlines():
            line = line.strip()
            if lang == "ini":
                line = line.removeprefix("ExecStart=") if line.startswith("ExecStart=") else ""
            elif lang == "cron" and line and not line.startswith("#"):
                line = line.split(None, CRON_FIELDS)[-1]
            if line and not line.startswith("#"):
                lines.append(_strip_comment(line))
    return lines


def inline_spans(text: str, tools: set[str]) -> list[str]:
    """`spans` in the prose whose first word (after VAR=value assignments) is one of ``tools``, with at least
    one argument."""
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    spans = []
    for span in re.findall(r"`([^`\n]+)`", prose):
        words = [w for w in span.split() if not re.fullmatch(r"[A-Za-z_]\w*=\S*", w)] or [""]
        if len(words) > 1 and Path(words[0]).name in tools and not words[0].endswith(":"):
            spans.append(span)
    return spans


def _strip_comment(line: str) -> str:
    """Drop a trailing `# comment` outside quotes."""
    quote = None
    for i, c in enumerate(line):
        if c in "'\"" and quote in (None, c):
            quote = None if quote else c
        elif c == "#" and quote is None and i and line[i - 1].isspace():
            return line[:i].rstrip()
    return line


def simple_commands(line: str) -> list[list[str]]:
    """The simple commands of a line: `$(...)` substitutions are commands of their own, then the line splits
    on unquoted `|`, `||`, `&&`, `;` and `{ }`; redirections and leading VAR=value assignments are dropped."""
    line, subs = _substitutions(line)
    out = [c for s in subs for c in simple_commands(s)]
    for piece in _split_unquoted(line):
        try:
            words = shlex.split(piece)
        except ValueError:  # a span with an unbalanced quote (a fragment in prose): split on blanks
            words = piece.split()
        words = _without_redirections([w for w in words if w not in ("{", "}")])
        while words and re.fullmatch(r"[A-Za-z_]\w*=.*", words[0]):
            words = words[1:]
        if words:
            out.append(words)
    return out


def _substitutions(line: str) -> tuple[str, list[str]]:
    subs, out, i = [], [], 0
    while i < len(line):
        if line.startswith("$(", i):
            depth, j = 1, i + 2
            while j < len(line) and depth:
                depth += {"(": 1, ")": -1}.get(line[j], 0)
                j += 1
            subs.append(line[i + 2:j - 1])
            out.append("SUBST")
            i = j
        else:
            out.append(line[i])
            i += 1
    return "".join(out), subs


def _split_unquoted(line: str) -> list[str]:
    pieces, cur, quote, i = [], [], None, 0
    while i < len(line):
        c = line[i]
        if c in "'\"" and quote in (None, c):
            quote = None if quote else c
        elif quote is None and c in "|&;":
            if c == "&" and (line[i + 1:i + 2] != "&"):  # `2>&1`, `&>`: part of a redirection
                cur.append(c)
                i += 1
                continue
            pieces.append("".join(cur))
            cur = []
            i += 2 if line[i + 1:i + 2] == c else 1
            continue
        cur.append(c)
        i += 1
    pieces.append("".join(cur))
    return [p.strip() for p in pieces if p.strip()]


def _without_redirections(words: list[str]) -> list[str]:
    out, skip = [], False
    for w in words:
        if skip:
            skip = False
        elif re.fullmatch(r"\d?(>>?|<|>&|&>)", w):
            skip = True  # the target follows
        elif not re.fullmatch(r"\d?(>>?|<|>&|&>)\S+", w):
            out.append(w)
    return out


def commands(tools: set[str]) -> list[Command]:
    """Every simple command of the docs' code blocks, and of their inline spans that start with ``tools``."""
    found = []
    for doc in DOCS:
        text, name = doc.read_text(), str(doc.relative_to(REPO))
        for line in block_lines(text):
            found += [Command(name, line, tuple(w), True) for w in simple_commands(line)]
        for span in inline_spans(text, tools):
            span = span.replace("\\|", "|")  # a `|` escaped in a Markdown table
            if "[" in span or "..." in span:  # a synopsis: `[--a X | --b]` alternatives, not pipes
                first = re.split(r" (?:\|\||&&) ", span)[0]  # `goodput run ... || [ $? -eq 3 ]`: the first command
                found.append(Command(name, span, tuple(first.split()), False))
                continue
            # in prose `a|b` (no blanks) is a choice (`--retrain incident|lemon|all`), ` | ` and ` || ` are the shell's
            for words in simple_commands(re.sub(r"(?<=\S)\|(?=\S)", ALT, span)):
                if Path(words[0]).name in tools:
                    found.append(Command(name, span, tuple(w.replace(ALT, "|") for w in words), False))
    return found
