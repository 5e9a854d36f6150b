"""C4-style link localisation (C4D, Fig. 6): a matrix of per-connection values, sources as rows and
destinations as columns. A row of hot cells points at the source, a column at the destination, a
hot cell on its own at that link.

Input: rows (job_id, src_host, dst_host, value) with higher = worse (a delay; pass a bandwidth as its
inverse, or `worse="lower"`). Where goodput's telemetry carries per-peer values it follows a naming
convention: a metric `<name>@<peer>` measured on a host is the connection from that host to <peer>
(`rdma_write_delay_us@gpu0003`); `peer_matrix` builds the input from such rows.

A cell is hot when it is more than ``z`` robust standard deviations (median and MAD over the job's
cells) worse than the typical connection. A row is blamed on its source when at least ``share`` of
its cells are hot (likewise a column on its destination); hot cells not explained by a blamed row
or column are links.
"""
from __future__ import annotations

import numpy as np
import polars as pl

SUSPECTS = {"job_id": pl.Utf8, "src_host": pl.Utf8, "dst_host": pl.Utf8, "kind": pl.Utf8, "score": pl.Float64}


def peer_matrix(telemetry: pl.DataFrame) -> pl.DataFrame:
    """Telemetry rows (job_id, host, metric, value) with metrics named `<name>@<peer>` ->
    (job_id, metric, src_host, dst_host, value): the median over time of each connection."""
    per_peer = telemetry.filter(pl.col("metric").str.contains("@", literal=True))
    parts = per_peer.with_columns(pl.col("metric").str.split_exact("@", 1).alias("mp")).unnest("mp")
    return (parts.rename({"field_0": "name", "field_1": "dst_host"})
            .group_by("job_id", "name", pl.col("host").alias("src_host"), "dst_host")
            .agg(pl.col("value").median()).rename({"name": "metric"}))


def localise(cells: pl.DataFrame, z: float = 4.0, share: float = 0.5, worse: str = "higher") -> pl.DataFrame:
    """cells (job_id, src_host, dst_host, value) -> link_suspects (job_id, src_host, dst_host, kind, score)
    with kind cell | row | column; a row names its source (dst_host NULL), a column its destination."""
    out = []
    for job_id, frame in cells.partition_by("job_id", as_dict=True, maintain_order=True).items():
        hosts_src = sorted(frame["src_host"].unique().to_list())
        hosts_dst = sorted(frame["dst_host"].unique().to_list())
        si, di = {h: i for i, h in enumerate(hosts_src)}, {h: i for i, h in enumerate(hosts_dst)}
        m = np.full((len(hosts_src), len(hosts_dst)), np.nan)
        m[[si[h] for h in frame["src_host"]], [di[h] for h in frame["dst_host"]]] = frame["value"].to_numpy()
        if worse == "lower":
            m = -m
        vals = m[np.isfinite(m)]
        if vals.size < 4:
            continue
        med = np.median(vals)
        mad = 1.4826 * np.median(np.abs(vals - med))
        score = (m - med) / (mad + 0.01 * abs(med) + 1e-12)
        hot = np.nan_to_num(score, nan=-np.inf) > z
        n_row, n_col = np.isfinite(m).sum(axis=1), np.isfinite(m).sum(axis=0)
        rows = np.flatnonzero((hot.sum(axis=1) >= share * np.maximum(n_row, 1)) & (hot.sum(axis=1) > 1))
        cols = np.flatnonzero((hot.sum(axis=0) >= share * np.maximum(n_col, 1)) & (hot.sum(axis=0) > 1))
        key = job_id[0] if isinstance(job_id, tuple) else job_id
        for r in rows:
            out.append((str(key), hosts_src[r], None, "row", float(np.nanmean(score[r][hot[r]]))))
        for c in cols:
            out.append((str(key), None, hosts_dst[c], "column", float(np.nanmean(score[:, c][hot[:, c]]))))
        lone = hot.copy()
        lone[rows, :] = False
        lone[:, cols] = False
        for r, c in zip(*np.nonzero(lone)):
            out.append((str(key), hosts_src[r], hosts_dst[c], "cell", float(score[r, c])))
    return pl.DataFrame(out, schema=SUSPECTS, orient="row") if out else pl.DataFrame(schema=SUSPECTS)
