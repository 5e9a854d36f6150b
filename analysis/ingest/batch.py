"""Many small files of one source read, parsed and accounted as one batch.

Every file is still identified on its own (unchanged, duplicate, unreadable:
analysis.ingest.one_file.prepare_file) and still gets its own rows, rejects, counts and
ingested_files record, written in the same transaction as the rest of its
group. What is shared is the work per call: the files' lines are split in one
polars read, parsed by one ``parse_batch`` call (analysis.ingest.parsers.batched) and
accounted in one pass, so a source of thousands of small logs costs about what
one log of the same size costs.

Only clean files join a batch: a file with an over-long line, a gzip problem,
NUL bytes, invalid UTF-8 or a lone-CR line end, a file whose content repeats
another file of the batch, and a file the batch parse does not account for
(unrecognised, a parser or accounting error) is parsed on its own afterwards,
exactly as without batching.
"""
from __future__ import annotations

import logging
from pathlib import Path

import duckdb
import polars as pl

from analysis import sql
from analysis.ingest import one_file
from analysis.ingest.accounting import FileCounts
from analysis.ingest.contract import BatchParser, BatchResult
from analysis.ingest.lines import _split_lines, is_clean
from analysis.ingest.parsers.batched import FILE, fid_of, local_no
from analysis.ingest.parsers.batched import counts as per_fid

log = logging.getLogger(__name__)

GROUP_FILES = 256  # files parsed together
GROUP_BYTES = 64 * 1024**2  # their bytes (gzip counted at GZIP_RATIO): bounds the batch's memory
SMALL_FILE = 8 * 1024**2  # a larger file is read alone (streamed where its parser streams)
GZIP_RATIO = 8


def _size(path: Path) -> int | None:
    try:
        size = path.stat().st_size
    except OSError:
        return None
    return size * GZIP_RATIO if path.name.endswith(".gz") else size


def batchable(path: Path, source: str | None) -> bool:
    return (source is not None and isinstance(one_file.parser_for(source), BatchParser) and not one_file._is_parquet(path)
            and not path.is_symlink())


def groups(files: list[tuple]):
    """Consecutive small files of one source whose parser reads batches, in order; any other file alone.
    ``files``: (path, source, ...) tuples, yielded as they are."""
    group: list[tuple] = []
    size = 0
    for item in files:
        path, source = item[0], item[1]
        n = _size(path) if batchable(path, source) else None
        if n is None or n > SMALL_FILE:
            if group:
                yield group
            group, size = [], 0
            yield [item]
            continue
        if group and (group[0][1] != source or len(group) >= GROUP_FILES or size + n > GROUP_BYTES):
            yield group
            group, size = [], 0
        group.append(item)
        size += n
    if group:
        yield group


def prepare(con: duckdb.DuckDBPyConnection, group: list[tuple[Path, str | None, str, dict | None]],
            source_dir: Path, options, shas: dict) -> list[one_file.Prepared]:
    """Prepared files of ``group`` (path, source, file_key, ingested_files row: None when it has none, ...
    when not looked up), in its order (see one_file.prepare_file)."""
    if len(group) == 1:
        path, source, key, previous = group[0]
        return [one_file.prepare_file(con, path, source, source_dir, options, batch_shas=shas, key=key,
                                    previous=previous)]
    out: list[one_file.Prepared | None] = [None] * len(group)
    pending = {}
    for i, (path, source, key, previous) in enumerate(group):
        prepared = one_file.prepare_file(con, path, source, source_dir, options, batch_shas=shas, defer=True,
                                       previous=previous, key=key)
        if prepared.pending is None:
            out[i] = prepared
        else:
            pending[i] = prepared.pending
    _look_up_twins(con, list(pending.values()))
    ready, later, seen = {}, {}, set()
    for i, p in pending.items():
        if p.twin or shas.get(p.twin_key) or p.twin_key in seen or not is_clean(p.raw):
            later[i] = p  # alone, after the batch: a copy of a file in it is then known as such
        else:
            seen.add(p.twin_key)
            ready[i] = p
    for i, prepared in zip(ready, _parse_batch(con, list(ready.values()), shas)):
        out[i] = prepared
    for i, p in later.items():
        out[i] = one_file.finish(con, p, shas)
    return out


def _look_up_twins(con: duckdb.DuckDBPyConnection, pendings: list[one_file.Pending]) -> None:
    """Pending.twin of every file, in one query (one_file.prepare_file does it per file: file_by_sha)."""
    if not pendings:
        return
    staged = pl.DataFrame([(p.ident.key, p.ident.sha256, p.ident.source, p.ident.host_hint, p.ident.fingerprint)
                           for p in pendings], orient="row",
                          schema={c: pl.Utf8 for c in ("path", "sha256", "source", "host_hint", "fingerprint")})
    twins = sql.query_on(con, "ingest/twins_of_files", "staged_twins", staged)
    found = dict(zip(twins["path"].to_list(), twins["twin"].to_list()))
    for p in pendings:
        p.twin = found.get(p.ident.key)




def _parse_batch(con: duckdb.DuckDBPyConnection, pendings: list[one_file.Pending], shas: dict) -> list[one_file.Prepared]:
    """Parse ``pendings`` (clean files of one source) in one call; a file the batch does not account
    for is parsed alone (one_file.finish), which reports what went wrong with it as before. The batch's
    rows and rejects travel with its last file that is in the batch (they are written in one transaction)."""
    if len(pendings) < 2:
        return [one_file.finish(con, p, shas) for p in pendings]
    datas = [p.raw.data for p in pendings]
    n_lines = [d.count(b"\n") + (1 if d and not d.endswith(b"\n") else 0) for d in datas]
    try:
        lines = _lines(b"".join(d if not d or d.endswith(b"\n") else d + b"\n" for d in datas), n_lines)
        result = one_file.parser_for(pendings[0].ident.source).parse_batch(lines, [p.ctx for p in pendings])
        files, tables, rejects = _split(result, n_lines, [p.ident.key for p in pendings])
    except (Exception, pl.exceptions.PanicException):  # noqa: BLE001 - each file alone says what is wrong
        log.debug("batch parse failed; parsing %d files one by one", len(pendings), exc_info=True)
        return [one_file.finish(con, p, shas) for p in pendings]
    out = []
    for fid, p in enumerate(pendings):
        if fid not in files:
            out.append(one_file.finish(con, p, shas))
            continue
        counts = files[fid]
        key, source = p.ident.key, p.ident.source
        record = one_file._record(p.ident, p.path, result.formats.get(fid), counts, "ok", "")
        out.append(one_file.Prepared(one_file.FileOutcome(key, source, "ok", counts.lines, counts.rows, counts.rejects, ""),
                                   record, rows=counts.rows))
        shas.setdefault(p.twin_key, key)
    if not files:  # every file of the batch is read alone
        return out
    holder = out[max(files)]
    holder.tables, holder.rejects = tables, rejects
    holder.rows = sum(t.height for t in tables.values())
    holder.held_bytes = sum(df.estimated_size() for df in (*tables.values(), rejects))
    return out


def _lines(data: bytes, n_lines: list[int]) -> pl.DataFrame:
    """fid, line_no (batch numbering) and text of the files whose lines, each file ending in a newline,
    make ``data``; ``n_lines``: lines per file."""
    total = sum(n_lines)
    text = _split_lines(data)["text"] if total else pl.Series("text", [], pl.Utf8)
    if text.len() != total:
        raise ValueError(f"{text.len()} lines split, {total} counted")
    counts = pl.Series("n", n_lines, dtype=pl.Int64)
    fid = pl.select(pl.int_range(len(n_lines), dtype=pl.Int64).repeat_by(counts).explode()).to_series()
    start = (counts.cum_sum() - counts).gather(fid)
    return pl.DataFrame({"fid": fid, "line_no": fid * FILE + pl.int_range(total, dtype=pl.Int64, eager=True) - start + 1,
                         "text": text})


def _split(result: BatchResult, n_lines: list[int], keys: list[str]) -> tuple[dict[int, FileCounts], dict, pl.DataFrame]:
    """The files whose lines the batch result accounts for (analysis.ingest.accounting.account, for all files at
    once), fid -> counts; and their rows and rejects with a ``file`` column and their own line numbers."""
    if result.rejects["line_no"].null_count():
        raise ValueError("a file-level reject in a batch cannot be told to its file")
    frames = [t.select(pl.col("line_no").cast(pl.Int64)) for t in result.tables.values() if t.height]
    row_nos = pl.concat(frames)["line_no"] if frames else pl.Series("line_no", [], pl.Int64)
    lines_with_rows = row_nos.unique()
    rejected = result.rejects["line_no"].unique()
    both = set((lines_with_rows.filter(lines_with_rows.is_in(rejected.implode())) // FILE).to_list())
    rows, row_lines, rejects = (per_fid(s // FILE) for s in (row_nos, lines_with_rows, rejected))
    files = {}
    for fid, n in enumerate(n_lines):
        counts = FileCounts(lines=n, row_lines=row_lines.get(fid, 0), rows=rows.get(fid, 0),
                            rejects=rejects.get(fid, 0), skipped=result.skipped.get(fid, 0),
                            merged=result.merged.get(fid, 0))
        if fid not in result.unrecognised and fid not in both and (
                counts.row_lines + counts.rejects + counts.skipped + counts.merged == n):
            files[fid] = counts
    accepted = pl.Series(list(files), dtype=pl.Int64).implode()
    paths = pl.Series(keys, dtype=pl.Utf8)

    def by_file(frame: pl.DataFrame) -> pl.DataFrame:
        fid = fid_of(pl.col("line_no"))
        return frame.drop("fid", strict=False).filter(fid.is_in(accepted)).with_columns(
            file=fid.replace_strict(pl.int_range(len(keys), eager=True), paths, return_dtype=pl.Utf8),
            line_no=local_no(pl.col("line_no")))

    return files, {name: by_file(t) for name, t in result.tables.items()}, by_file(result.rejects.sort("line_no"))
