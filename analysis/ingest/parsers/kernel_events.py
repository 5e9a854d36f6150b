"""Kernel message classification (node_events kind/code/device) and severity names.

Rules run only on messages that pass a cheap literal screen, because polars
evaluates every when/then branch on every row: screening first keeps the
parser near the speed of timestamp parsing on ordinary (uninteresting) lines.
First matching rule wins; unmatched messages are kind 'other' with the text
kept, since later taxonomy rules match on message text.
"""
from __future__ import annotations

import polars as pl

PCI = r"[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?"
ADDR = rf"({PCI})"

# A superset of every rule trigger below; misses here are misses everywhere.
SCREEN = (r"(?i)xid|nvrm|gsp|aer:|pcie bus error|edac|hardware error|machine check|mlx[45]_|"
          r"state changed to|\bib\w*:|nfs|lustre|mount|cifs|oom|out of memory|segfault|"
          r"general protection|ext4-fs|xfs \(")

SEVERITIES = ["emerg", "alert", "crit", "err", "warning", "notice", "info", "debug"]
# Level words used by dmesg --decode, Fabric Manager and BGL. BGL orders
# INFO < WARNING < SEVERE < ERROR < FATAL < FAILURE, hence SEVERE/FATAL/FAILURE.
LEVEL_NAMES = {
    "emerg": "emerg", "emergency": "emerg", "panic": "emerg", "alert": "alert", "failure": "alert",
    "crit": "crit", "critical": "crit", "fatal": "crit", "err": "err", "error": "err", "severe": "err",
    "warn": "warning", "warning": "warning", "notice": "notice", "info": "info", "information": "info",
    "debug": "debug", "trace": "debug",
}


def severity_from_pri(pri: pl.Expr) -> pl.Expr:
    """Syslog PRI / kmsg prefix: facility * 8 + level."""
    return (pri % 8).replace_strict(dict(enumerate(SEVERITIES)), default=None, return_dtype=pl.Utf8)


def severity_from_word(word: pl.Expr) -> pl.Expr:
    return word.str.to_lowercase().replace_strict(LEVEL_NAMES, default=None, return_dtype=pl.Utf8)


def _x(m: pl.Expr, pattern: str, group: int = 1) -> pl.Expr:
    return m.str.extract(pattern, group)


def _gpu(addr: pl.Expr) -> pl.Expr:
    """One spelling per GPU, so events from differently worded lines group
    together: lowercase, PCI function dropped (0000:B3:00.0 -> 0000:b3:00),
    domain added when the driver omitted it (b3:00 -> 0000:b3:00)."""
    a = addr.str.strip_chars().str.to_lowercase().str.replace(r"\.[0-7]$", "")
    return pl.when(a.str.count_matches(":") == 1).then(pl.lit("0000:") + a).otherwise(a)


def _rules(m: pl.Expr) -> list[tuple[str, str, pl.Expr, pl.Expr]]:
    """(kind, match regex, code, device) in priority order."""
    has = m.str.contains
    null = pl.lit(None, dtype=pl.Utf8)
    any_pci = _x(m, ADDR)
    xid = r"NVRM: Xid \((?:PCI:)?([^)]*)\): (\d+)"
    sxid = r"SXid \((?:PCI:)?([^)]*)\): (\d+)"
    off_bus = rf"GPU (?:at )?(?:PCI:)?({PCI})\b.*fallen off the bus"
    aer_code = (pl.when(has(r"(?i)uncorrected \(fatal\)|severity=fatal")).then(pl.lit("uncorrected_fatal"))
                .when(has(r"(?i)uncorrected \(non-fatal\)")).then(pl.lit("uncorrected_nonfatal"))
                .when(has(r"(?i)\bcorrected\b")).then(pl.lit("corrected")))
    aer_dev = pl.coalesce(_x(m, rf"received: {ADDR}"), _x(m, rf"^\S+ {ADDR}"), any_pci)
    ecc_dev = _x(m, r"\bon (?:memory )?([^\s(]+)")
    ib_code = (pl.when(has(r"(?i)module event\[error\]")).then(pl.lit("module_error"))
               .when(has(r"(?i)module event.*cable unplugged")).then(pl.lit("module_unplugged"))
               .when(has(r"(?i)module event.*cable plugged")).then(pl.lit("module_plugged"))
               .when(has(r"(?i)module event")).then(pl.lit("module_event"))
               .when(has(r"(?i)state changed to active|link (?:is )?up\b|link becomes ready")).then(pl.lit("up"))
               .when(has(r"(?i)state changed to|link (?:is )?down\b"))
               .then(_x(m, r"(?i)state changed to (\w+)").str.to_lowercase().fill_null("down"))
               .otherwise(pl.lit("health")))
    ib_if = r"\b(ib\w*\d\w*|mlx5_\d+)(?: port \d+)?:"
    fs_code = (pl.when(has(r"(?i)nfs: server \S+ OK")).then(pl.lit("nfs_ok"))
               .when(has(r"(?i)\bnfs")).then(pl.lit("nfs"))
               .when(has(r"(?i)lustre")).then(pl.lit("lustre"))
               .when(has(r"(?i)cifs")).then(pl.lit("cifs"))
               .when(has(r"(?i)ext4-fs")).then(pl.lit("ext4"))
               .when(has(r"XFS \(")).then(pl.lit("xfs"))
               .otherwise(pl.lit("mount")))
    fs_dev = pl.coalesce(_x(m, r"(?i)nfs: server (\S+)"), _x(m, r"([\w-]+-(?:OST|MDT|MGS)[0-9a-fA-F]{4})"),
                         _x(m, r"(?i)(?:ext4-fs error \(device |ext4-fs \(|XFS \()([\w.-]+)\)"))
    oom_code = (pl.when(has(r"(?i)kill(?:ed)? process")).then(pl.lit("killed"))
                .when(has("invoked oom-killer")).then(pl.lit("invoked"))
                .when(has("oom_reaper")).then(pl.lit("reaped"))
                .otherwise(pl.lit("oom_kill")))
    return [
        ("xid", xid, _x(m, xid, 2), _gpu(_x(m, xid, 1))),
        ("sxid", sxid, _x(m, sxid, 2), _x(m, sxid, 1)),
        ("xid", "fallen off the bus", pl.lit("79"), _gpu(_x(m, off_bus))),  # NVIDIA-only wording
        ("gsp", r"(?i)RPC response from GPU\d* GSP|GSP\b.*\btim(?:e|ed) ?out", pl.lit("rpc_timeout"),
         pl.coalesce(any_pci, _x(m, r"\b(GPU\d+)\b"))),
        ("pcie_aer", r"AER:|PCIe Bus Error", aer_code, aer_dev),
        ("mem_ecc", r"EDAC\b.*\b[CU]E\b", _x(m, r"\b([CU]E)\b"),
         pl.when(ecc_dev.str.to_lowercase() != "unknown").then(ecc_dev)),
        ("mce", r"(?i)\[Hardware Error\]|machine check events logged|machine check exception|mce: .*machine check",
         pl.when(has(r"(?i)events logged")).then(pl.lit("events_logged"))
         .when(has(r"(?i)exception")).then(pl.lit("exception")).otherwise(pl.lit("hardware_error")),
         pl.concat_str(pl.lit("cpu"), _x(m, r"\bCPU ?(\d+)"))),
        ("ib_link", r"(?i)mlx[45]_\w+ .*(?:port module event|\blink (?:is )?(?:down|up)\b|"
                    r"health compromised|unrecoverable|fw fatal)|port \d+ state changed to|"
                    + ib_if + r".*\blink (?:is )?(?:down|up|becomes ready)",
         ib_code, pl.coalesce(_x(m, rf"mlx[45]_\w+ {ADDR}"), _x(m, ib_if), any_pci)),
        ("filesystem", r"(?i)nfs: server \S+ (?:not responding|OK)|lustreerror|lustre:.*(?:connection.*lost|"
                       r"lost connection)|mount error|unable to mount|mount\.\w+: |mount failed|failed to mount|"
                       r"cifs:? vfs:|ext4-fs error|ext4-fs \(\S+\): .*error|XFS \(\S+\): .*(?:error|corrupt|shutdown)",
         fs_code, fs_dev),
        ("oom", r"(?i)out of memory|invoked oom-killer|oom-kill:|oom_reaper", oom_code, null),
        ("segfault", r"segfault at|general protection fault", _x(m, r" in ([^\[\s]+)\["), null),
        ("nvrm", "NVRM:", null, any_pci),
    ]


def classify(df: pl.DataFrame, message: str = "message") -> pl.DataFrame:
    """Add kind, code and device columns to ``df``, keeping row order.
    Rules claim rows in priority order on a narrow (idx, message) frame, so
    each capture-group extraction (the slow part) runs only on its own kind;
    results are scattered back instead of re-sorting the wide frame."""
    m, n = pl.col(message), df.height
    screen = df.select(m.str.contains(SCREEN).fill_null(False)).to_series()
    rest = df.select(screen.arg_true().alias("_idx"), m.filter(screen))
    parts = []
    for kind, rx, code, device in _rules(m):
        if rest.height == 0:
            break
        hit = rest.select(m.str.contains(rx)).to_series()
        if hit.any():
            parts.append(rest.filter(hit).select("_idx", kind=pl.lit(kind), code=code, device=device)
                         .with_columns(pl.col("code", "device").cast(pl.Utf8)))
            rest = rest.filter(~hit)
    kinds = pl.repeat("other", n, eager=True, dtype=pl.Utf8)
    codes, devices = pl.Series([None] * n, dtype=pl.Utf8), pl.Series([None] * n, dtype=pl.Utf8)
    if parts:
        found = pl.concat(parts)
        kinds = kinds.scatter(found["_idx"], found["kind"])
        codes = codes.scatter(found["_idx"], found["code"])
        devices = devices.scatter(found["_idx"], found["device"])
    return df.with_columns(kind=kinds, code=codes, device=devices)
