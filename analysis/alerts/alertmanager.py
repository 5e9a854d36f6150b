"""Alertmanager alerts for goodput's NEW node decisions (docs/alerts.md#alerts): the body of Alertmanager's v2
`POST /api/v2/alerts` (a list of postable alerts: labels, annotations, startsAt, endsAt, generatorURL).

New, against the decisions before the latest ones (node_action_history's previous as-of):
- drain: a node whose action now is drain_now or drain_after_job and was another (or none) before;
- escalation: a node escalated now and not before: the repeat-offender escalation rma in its reason (one part
  failed again and again, no repair since), or the node lifecycle's state 'escalated' (node_lifecycle_now) since
  the previous as-of.
Without node_action_history (or with no as-of before the latest) every current drain and escalation is new.
The same latest decisions give the same alerts on every run, so a nightly resend keeps them active in
Alertmanager (same labels: one alert) until a newer as-of no longer calls them new and they end (ALERT_HOLD)."""
from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from datetime import datetime, timedelta, timezone

import duckdb
import polars as pl

from analysis import sql
from analysis.nodes.exports import DRAIN_ACTIONS
from analysis.settings import HealthConfig

API_PATH = "/api/v2/alerts"
URL_ENV = "GOODPUT_ALERTMANAGER_URL"
TIMEOUT_S = HealthConfig.alert_timeout_s
# longer than a night between runs: a resend by the next run finds the alert still active (no second notification)
ALERT_HOLD = timedelta(hours=36)
# build_repeat_offenders.sql ends the reason of an rma escalation so; build_node_actions.sql appends "; repaired
# <day> since: ..." when a ticket closed after it, and the ladder then demotes rma to repair
RMA_MARK, RMA_REPAIRED = "RMA it", "RMA it; repaired "
ALERTNAMES = {"drain": "GoodputNodeDrain", "escalation": "GoodputNodeEscalated"}
SEVERITY = {"drain_now": "critical", "drain_after_job": "warning"}
DECISIONS = {"host": pl.Utf8, "as_of": pl.Datetime("us"), "action": pl.Utf8, "cause": pl.Utf8, "score": pl.Float64,
             "reason": pl.Utf8}
NEW = {"kind": pl.Utf8, **DECISIONS, "previous_action": pl.Utf8, "escalated_since": pl.Datetime("us")}


def present(con: duckdb.DuckDBPyConnection, table: str) -> bool:
    """table_exists, and False for a table this release's sql/ does not declare (yet)."""
    try:
        return sql.table_exists(con, table)
    except ValueError:
        return False


def new_decisions(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """One row per new decision (NEW's columns): kind drain or escalation, the node's current decision, the action
    it had before (None: none, or no earlier decisions) and, for a lifecycle escalation, since when."""
    now = _read(con, "alerts/current_actions") if present(con, "node_actions") else pl.DataFrame(schema=DECISIONS)
    if now.is_empty():
        return pl.DataFrame(schema=NEW)
    as_of = now["as_of"].max()
    before = (_read(con, "alerts/previous_actions", {"as_of": as_of}) if present(con, "node_action_history")
              else pl.DataFrame(schema=DECISIONS))
    joined = now.join(before.select("host", previous_action="action", previous_reason="reason"), on="host",
                      how="left")
    drains = joined.filter(pl.col("action").is_in(DRAIN_ACTIONS)
                           & pl.col("previous_action").ne_missing(pl.col("action")))
    rma = joined.filter(_rma("reason") & ~_rma("previous_reason").fill_null(False)).select("host")
    escalated = _lifecycle_escalations(con, before["as_of"].max())
    hosts = pl.concat([rma, escalated.select("host")]).unique()
    lifecycle_reason = pl.format("escalated by the node lifecycle since {}", pl.col("escalated_since"))
    escalations = (hosts.join(joined, on="host", how="left").join(escalated, on="host", how="left")
                   .with_columns(as_of=pl.col("as_of").fill_null(as_of),
                                 reason=pl.col("reason").fill_null(lifecycle_reason)))
    return pl.concat([drains.with_columns(kind=pl.lit("drain"), escalated_since=pl.lit(None, pl.Datetime("us"))),
                      escalations.with_columns(kind=pl.lit("escalation"))], how="diagonal_relaxed"
                     ).select(list(NEW)).cast(NEW).sort("kind", "host")


def _lifecycle_escalations(con, previous_as_of) -> pl.DataFrame:
    """Nodes node_lifecycle_now holds escalated, since after the previous decisions (all, with none). That is a
    view, which table_exists does not see: the table node_lifecycle, built with it, says whether it is there."""
    if not present(con, "node_lifecycle"):
        return pl.DataFrame(schema={"host": pl.Utf8, "escalated_since": pl.Datetime("us")})
    escalated = sql.query(con, "alerts/escalated_nodes").select(
        "host", escalated_since=pl.col("since").cast(pl.Datetime("us")))
    if previous_as_of is None:
        return escalated
    return escalated.filter(pl.col("escalated_since").is_null() | (pl.col("escalated_since") > previous_as_of))


def _rma(column: str) -> pl.Expr:
    text = pl.col(column)
    return text.str.contains(RMA_MARK, literal=True) & ~text.str.contains(RMA_REPAIRED, literal=True)


def _read(con, name: str, params: dict | None = None) -> pl.DataFrame:
    return sql.query(con, name, params).cast(DECISIONS)


def alerts(new: pl.DataFrame, now: datetime, cluster: str | None = None,
           generator_url: str | None = None) -> list[dict]:
    """The postable alerts: labels say which node and decision (one alert per node and kind), annotations why.
    startsAt is the decision's as-of; endsAt ALERT_HOLD after this run."""
    out = []
    for r in new.iter_rows(named=True):
        labels = {"alertname": ALERTNAMES[r["kind"]], "node": r["host"], "source": "goodput",
                  "severity": SEVERITY.get(r["action"], "warning") if r["kind"] == "drain" else "warning"}
        labels |= {k: r[k] for k in ("action", "cause") if r[k]} | ({"cluster": cluster} if cluster else {})
        score = f"{r['score']:.2f}" if r["score"] is not None else "none"
        what = (f"drain {r['host']} ({r['action']})" if r["kind"] == "drain"
                else f"escalate {r['host']} (RMA or inspection)")
        annotations = {"summary": f"goodput: {what}: {r['cause'] or 'cause unknown'}, score {score}",
                       "description": r["reason"] or "", "score": score, "as_of": _iso(r["as_of"]),
                       "previous_action": r["previous_action"] or "none"}
        if r["escalated_since"] is not None:
            annotations["escalated_since"] = _iso(r["escalated_since"])
        starts = _utc(r["as_of"])
        alert = {"labels": labels, "annotations": annotations, "startsAt": _iso(starts),
                 "endsAt": _iso(max(now, starts) + ALERT_HOLD)}
        if generator_url:
            alert["generatorURL"] = generator_url
        out.append(alert)
    return out


def post(url: str, payload: list[dict], timeout_s: float = TIMEOUT_S) -> str | None:
    """POST ``payload`` to the Alertmanager at ``url`` (its base URL, or the full /api/v2/alerts one). None when it
    took them; else what went wrong, for the run's output (never raised: the files are written either way)."""
    endpoint = url.rstrip("/")
    if not endpoint.endswith(API_PATH):
        endpoint += API_PATH
    if urllib.parse.urlsplit(endpoint).scheme not in ("http", "https"):
        return f"the Alertmanager URL must be http(s)://...: {url!r} (${URL_ENV}); nothing was sent"
    request = urllib.request.Request(endpoint, data=json.dumps(payload).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            response.read()
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode(errors="replace").strip()[:200]
        return f"the Alertmanager at {endpoint} refused {len(payload)} alert(s): HTTP {exc.code} {detail}".rstrip()
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return f"could not post {len(payload)} alert(s) to the Alertmanager at {endpoint}: {reason}"
    return None


def _utc(moment: datetime) -> datetime:
    """Naive times in the warehouse are UTC."""
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def _iso(moment: datetime) -> str:
    return _utc(moment).astimezone(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
