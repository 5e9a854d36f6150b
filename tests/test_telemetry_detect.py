"""Faulty machines from telemetry (Minder and the methods beside it) on the simulator's per-job telemetry."""
import json
from datetime import datetime, timedelta

import numpy as np
import polars as pl
import pytest

from analysis.simulate.telemetry import FAULTS, TelemetryJob, job_frame
from analysis.telemetry import detect, evaluate, frames, train
from analysis.telemetry.truth import TRUTH_SCHEMA

CFG = detect.DetectConfig()


def make_jobs(seed: int, n_faulty: int, n_healthy: int, hosts: int = 16, n_slow: int = 0, minutes: int = 60,
              shuffle: bool = False):
    """Jobs of the simulator's telemetry model: a faulty machine drifts for 3-8 minutes before the job
    halts; in n_slow completed jobs a machine runs slow for the last 25-90% of the telemetry; every job
    has 1-2 machines with a 20-60 s spike, some a job-wide shift or a stopped exporter (decoys). Jobs
    follow each other in time: faulty, slow, healthy, or in a random order (shuffle)."""
    rng = np.random.default_rng(seed)
    kinds = ["fault"] * n_faulty + ["slow"] * n_slow + ["ok"] * n_healthy
    kinds = [str(k) for k in rng.permutation(kinds)] if shuffle else kinds
    out, truth, t = [], [], datetime(2024, 3, 1)
    for i, kind in enumerate(kinds):
        names = [f"n{seed}x{i:03d}h{h:02d}" for h in range(hosts)]
        end = t + timedelta(hours=2)
        bad = names[int(rng.integers(hosts))] if kind != "ok" else None
        lead = None if kind == "ok" else float(rng.uniform(180, 480)) if kind == "fault" else \
            float(rng.uniform(0.25, 0.9)) * minutes * 60
        job = TelemetryJob(f"{seed}-{i}", names, t, end, bad, end - timedelta(seconds=lead) if bad else None,
                           slow=kind == "slow")
        rows, tr = job_frame(job, rng, window_minutes=minutes)
        truth += tr
        out.append(rows.select("time", "host", "metric", "value").with_columns(pl.col("time").dt.replace_time_zone(None)))
        t = end
    return out, pl.DataFrame(truth, schema=TRUTH_SCHEMA)


@pytest.fixture(scope="module")
def trained():
    rows, truth = make_jobs(1, 6, 24)
    built = [frames.build(f"1-{i}", r) for i, r in enumerate(rows)]
    faulty = set(truth.filter(pl.col("kind") == "fault")["job_id"])
    labels = [evaluate.window_labels(f, truth, CFG) for f in built]
    # a seeded subset of 3,000 windows per metric, as in the F1 test below: a sixth of the training
    models = train.train([f for f in built if f.job_id not in faulty], CFG, epochs=15,
                         labelled=(built, labels), methods=("minder", "raw"), max_windows=3000)
    return models


def test_minder_names_the_injected_machine_and_a_metric_the_fault_touched(trained):
    rows, truth = make_jobs(2, 8, 8)
    faults = {r["job_id"]: r for r in truth.filter(pl.col("kind") == "fault").iter_rows(named=True)}
    right = 0
    for i, r in enumerate(rows):
        job = f"2-{i}"
        alerts = [a for a in detect.detect(trained, frames.build(job, r), CFG, methods=("minder",))
                  if a["method"] == "minder"]
        if job not in faults:
            assert not alerts, alerts  # healthy jobs with short jitters stay silent
            continue
        f = faults[job]
        for a in alerts:
            if a["confirmed_at"] >= f["start"]:  # once the drift is under way, only the faulty machine
                assert a["host"] == f["host"] and a["metric"] in f["metrics"].split(","), (a, f)
        first = evaluate.verdicts(evaluate.as_table({job: alerts}))
        right += first.height == 1 and first["host"][0] == f["host"]
    # a healthy machine the simulator's per-host spread sets apart (e.g. an SM clock 0.3% under its peers',
    # clipped at 1410 MHz) can be confirmed before the drift starts: that job's first alert is wrong
    assert right >= 7


def test_bad_rows_and_a_machine_that_stops_reporting(trained):
    rows, truth = make_jobs(3, 0, 1)
    r = rows[0]
    host = r["host"].unique().sort()[3]
    cut = r["time"].min() + timedelta(minutes=30)
    bad = pl.DataFrame({"time": [cut, cut, cut], "host": [host] * 3,
                        "metric": ["DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_SM_CLOCK", "node_cpu_util_percent"],
                        "value": [float("nan"), -5.0, float("inf")]})
    dup = r.head(50)  # duplicate timestamps: the same samples again
    r = pl.concat([r.filter((pl.col("host") != host) | (pl.col("time") < cut)), bad, dup])
    f = frames.build("3-0", r)
    assert f.dropped == {"not a number": 1, "negative": 1, "infinite": 1}
    h = f.hosts.index(host)
    tail = f.values[:, h, int(40 * 60 / f.interval_s):]
    assert np.isnan(tail).all()  # not filled from 30 minutes ago
    assert np.isfinite(f.values[:, [i for i in range(len(f.hosts)) if i != h], :]).mean() > 0.99
    alerts = detect.detect(trained, f, CFG, methods=("minder", "raw"))
    assert {a["method"] for a in alerts} == {"missing_data"}  # no fault, and the silent machines are named
    mine = [a for a in alerts if a["host"] == host]
    assert len(mine) == 1 and abs((mine[0]["window_start"] - cut).total_seconds()) <= 60
    # the simulator's stopped exporter (a decoy) is missing data too, never a fault
    stopped = truth.filter(pl.col("kind") == "stopped")
    assert stopped.height == 1 and {a["host"] for a in alerts} == {host, stopped["host"][0]}


def test_nearest_fill_respects_the_gap_limit():
    x = np.array([[1, np.nan, np.nan, 4, np.nan, np.nan, np.nan, np.nan, np.nan, 9.0]])
    out = frames._nearest_fill(x, 2)
    assert out.tolist()[0][:4] == [1, 1, 4, 4] and np.isnan(out[0, 6]) and out[0, 8] == 9


def test_faults_touch_the_metrics_the_truth_lists():
    assert all(FAULTS[k] for k in FAULTS)  # the simulator's fault kinds each touch some metric


def test_robust_threshold_ignores_one_faulty_machine_per_training_job():
    rng = np.random.default_rng(0)
    clean = [np.abs(rng.normal(size=16)) for _ in range(10)]
    thr, out = train.robust_threshold(clean, 1.5, 3.0)
    assert thr == pytest.approx(1.5 * max(v.max() for v in clean)) and out == []  # clean jobs: the old rule
    dirty = [v.copy() for v in clean]
    for j in range(0, 10, 2):  # half the jobs carry a machine that ran slow
        dirty[j][j] = 40.0 + j
    dirty[3][5] = np.nan  # a machine without data is nobody's score
    thr_dirty, out = train.robust_threshold(dirty, 1.5, 3.0)
    assert thr_dirty <= thr and out == [(j, j) for j in range(0, 10, 2)]
    assert train.robust_threshold([np.array([2.0, -np.inf])], 1.5, 3.0) == (float("-inf"), [])


@pytest.mark.bench
def test_minder_f1_on_a_cluster_whose_completed_jobs_hide_slow_machines():
    """Minder's main case: half the jobs with a faulty machine complete (one machine ran slow, nothing
    failed), so the completed jobs it trains on carry faulty machines nobody labelled. Trained as the
    pipeline trains (on every completed job, here of the earlier half), judged on the later half, beside
    the baselines the paper names. A model-quality bar (F1, continuity's gain, delay): `make bench`; that
    the unlabelled slow machines are left out of the thresholds `make test` checks through the warehouse
    (test_detection_over_the_warehouse_feeds_attribution)."""
    rows, truth = make_jobs(31, 12, 24, n_slow=12, minutes=30, shuffle=True)
    built = [frames.build(f"31-{i}", r) for i, r in enumerate(rows)]
    faults = truth.filter(pl.col("kind") == "fault")
    slow = faults.filter(pl.col("fault_type").str.starts_with("slow_"))
    early, late = built[:24], built[24:]
    methods = ("minder", "minder_nc", "raw", "md", "aegis")
    failed = set(faults["job_id"]) - set(slow["job_id"])
    models = train.train([f for f in early if f.job_id not in failed], CFG, epochs=20, methods=methods,
                         max_windows=3000)
    hidden = {(j, h) for j, h in slow.select("job_id", "host").iter_rows() if j in {f.job_id for f in early}}
    assert hidden and hidden <= set(models.suspects)  # the slow machines it trained on were left out
    judged = {f.job_id for f in late}
    later = pl.col("job_id").is_in(sorted(judged))
    assert 2 * slow.filter(later).height >= faults.filter(later).height  # at least half the faulty jobs complete
    alerts = {f.job_id: detect.detect(models, f, CFG, methods=methods) for f in late}
    ev = {r["method"]: r for r in evaluate.evaluate(evaluate.as_table(alerts), truth, list(alerts),
                                                     methods).iter_rows(named=True)}
    print({m: (round(r["f1"], 3), round(r["precision"], 3), round(r["recall"], 3), r["mean_detection_delay_s"])
           for m, r in ev.items()})
    assert ev["minder"]["n_jobs"] == 24 and ev["minder"]["faulty_jobs"] >= 10
    assert ev["minder"]["f1"] >= 0.9, ev["minder"]
    assert ev["minder_nc"]["f1"] < ev["minder"]["f1"]  # continuity matters, as in the paper
    assert ev["minder"]["mean_detection_delay_s"] < 480


def test_detection_over_the_warehouse_feeds_attribution(tmp_path):
    """The simulated cluster's telemetry (faulty jobs and completed ones) through ingest: Minder names the
    faulty machines of truth/telemetry_faults.csv, its alerts are node events attribution can use, and
    the detectors are evaluated against attribution."""
    from analysis import warehouse
    from analysis.ingest.engine import ingest_directory
    from analysis.derive.metrics import MetricsConfig
    from analysis.simulate.config import preset
    from analysis.simulate.run import simulate
    from analysis.derive.taxonomy import load
    from analysis.telemetry import run as telemetry_run
    from assets.pure_builds import build_all

    simulate(preset("small", seed=1), tmp_path / "src")
    con = warehouse.connect(tmp_path / "w.duckdb")
    ingest_directory(con, tmp_path / "src")
    build_all(con, load(), MetricsConfig())  # jobs first; attribution again below, with the alerts
    # one covered job also reports a per-peer delay (`<name>@<peer>`): its slow link is localised (C4)
    covered = con.sql("SELECT DISTINCT host, min(time) OVER (PARTITION BY host) AS t FROM telemetry "
                      "WHERE metric = 'DCGM_FI_DEV_GPU_UTIL' ORDER BY t, host LIMIT 8").pl()
    hosts, t0 = covered["host"].to_list(), covered["t"].max()
    peer = [(t0, s, f"rdma_write_delay_us@{d}", 60.0 if (s, d) == (hosts[1], hosts[4]) else 20.0 + (i % 3))
            for i, (s, d) in enumerate((s, d) for s in hosts for d in hosts if s != d)]
    con.executemany("INSERT INTO telemetry (time, host, metric, value, file, line_no) VALUES (?, ?, ?, ?, 'x', 0)",
                    [list(p) for p in peer])
    result = telemetry_run.run(con, CFG, tmp_path / "models", epochs=10)
    suspects = con.sql("SELECT kind, src_host, dst_host FROM link_suspects").fetchall()
    assert ("cell", hosts[1], hosts[4]) in suspects
    assert result.model_path.exists() and result.model_path.with_suffix(".json").exists()
    truth = pl.read_csv(tmp_path / "src/truth/telemetry_faults.csv", schema_overrides={"job_id": pl.Utf8})
    faults = {r["job_id"]: r for r in truth.filter(pl.col("kind") == "fault").iter_rows(named=True)}
    minder = result.alerts.filter(pl.col("method") == "minder")
    # every faulty job: those that failed and those whose slow machine let them complete (trained on)
    slow = {j for j, r in faults.items() if r["fault_type"].startswith("slow_")}
    states = dict(con.sql("SELECT job_id::VARCHAR, state FROM telemetry_jobs").fetchall())
    assert slow and {states[j] for j in slow} == {"COMPLETED"}
    assert "COMPLETED" not in {states[j] for j in set(faults) - slow}
    for j, f in faults.items():  # the injected machine, on a metric its fault touched
        mine = minder.filter((pl.col("job_id") == j) & (pl.col("host") == f["host"]))
        assert mine.height and set(mine["metric"]) <= set(f["metrics"].split(",")), (j, mine)
    assert {(j, faults[j]["host"]) for j in slow} <= set(result.suspects)  # left out of the thresholds
    # a completed job's other machines are alerted only where they already stood out in training (the
    # simulator's per-host spread: a machine can sit 1-5% off its peers all job long)
    others = minder.join(pl.DataFrame([{"job_id": j, "host": f["host"]} for j, f in faults.items()]),
                         on=["job_id", "host"], how="anti")
    completed = others.filter(pl.col("job_id").replace_strict(states, default=None) == "COMPLETED")
    assert set(completed.select("job_id", "host").iter_rows()) <= set(result.suspects)
    assert result.trained_on >= 3
    events = con.sql("SELECT * FROM node_events WHERE source = 'telemetry'").pl()
    assert events.height == minder.height and set(events["code"]) <= {"network", "gpu", "host", "other"}
    # a nightly run re-judges only the recent jobs and keeps the verdicts on older ones, without doubles
    before = con.sql("SELECT job_id, host, metric, method FROM machine_alerts ORDER BY ALL").fetchall()
    again = telemetry_run.run(con, CFG, tmp_path / "models", epochs=10, lookback_days=0)
    assert again.jobs < result.jobs
    assert con.sql("SELECT count(*) FROM telemetry_jobs").fetchall()[0][0] == result.jobs
    kept = con.sql("SELECT job_id, host, metric, method FROM machine_alerts ORDER BY ALL").fetchall()
    assert {a for a in before if a[0] not in again.judged} == {a for a in kept if a[0] not in again.judged}
    assert any(a[2] == "minder" or a[3] == "minder" for a in kept if a[0] not in again.judged)
    assert con.sql("SELECT count(*) FROM node_events WHERE source = 'telemetry'").fetchall()[0][0] == \
        con.sql("SELECT count(*) FROM machine_alerts WHERE method = 'minder'").fetchall()[0][0]
    build_all(con, load(), MetricsConfig())
    causes = con.sql("SELECT DISTINCT cause FROM failure_attribution WHERE source = 'telemetry'").pl()["cause"]
    assert set(causes) and set(causes) <= {"degraded_network", "degraded_gpu", "degraded_host"}
    ev = {r["method"]: r for r in telemetry_run.evaluate_against_attribution(con).iter_rows(named=True)}
    assert ev["minder"]["against"] == "attribution" and ev["minder"]["recall"] > 0
    assert ev["minder"]["mean_detection_delay_s"] < 0  # confirmed before the blamed event
    blamed = con.sql("SELECT b.job_id::VARCHAR, b.host, b.event_time FROM failure_attribution b JOIN telemetry_jobs "
                     "USING (job_id, instance) WHERE b.is_primary AND b.host IS NOT NULL AND b.source <> 'telemetry'"
                     ).fetchall()
    assert blamed
    for j, host, at in blamed:  # every blamed machine was confirmed before the event that blamed it
        assert minder.filter((pl.col("job_id") == j) & (pl.col("host") == host) & (pl.col("confirmed_at") < at)).height
    # attribution takes a completed job as healthy: the slow machines Minder finds there count as false alarms
    assert ev["minder"]["false_alarms"] >= len(slow)
    # the detector was trained unranked; once attribution is built its metrics are ranked (once), the order
    # saved with it and its alerts' metric_rank following it
    assert json.loads(again.model_path.with_suffix(".json").read_text())["ranked"] is False
    priority = telemetry_run.rank_metrics(con, CFG, tmp_path / "models")
    meta = json.loads(again.model_path.with_suffix(".json").read_text())
    assert meta["ranked"] and meta["priority"] == priority and sorted(priority) == sorted(meta["metrics"])
    ranks = con.sql("SELECT metric, metric_rank FROM machine_alerts WHERE model_version = $v",
                    params={"v": again.model_version}).fetchall()
    assert ranks and all(r == (priority.index(m) if m in priority else len(priority)) for m, r in ranks)
    assert telemetry_run.rank_metrics(con, CFG, tmp_path / "models") is None
    con.close()


def test_alert_events_are_numbered_whatever_order_the_alerts_come_in():
    """A job's Minder alerts become node events numbered by time, host and metric, not by the metric
    priority they were found in (ranked after them): the same alerts give the same node events."""
    from analysis.telemetry.run import ALERT_SCHEMA, alert_events

    t = datetime(2024, 3, 3, 6, 30)
    alerts = pl.DataFrame([{"job_id": "7", "instance": 0, "host": "gpu01", "metric": m, "method": "minder",
                            "window_start": t, "confirmed_at": t, "score": 9.0, "metric_rank": r}
                           for r, m in enumerate(["node_cpu_util_percent", "DCGM_FI_DEV_GPU_UTIL"])], schema=ALERT_SCHEMA)
    events = [alert_events(a, "v1").sort("line_no") for a in (alerts, alerts.reverse())]
    assert events[0].equals(events[1]) and events[0]["line_no"].to_list() == [1, 2]


@pytest.mark.parametrize("fault, expect", [
    ({"link": ("h03", "h07")}, [("cell", "h03", "h07")]),
    ({"src": "h05"}, [("row", "h05", None)]),
    ({"dst": "h02"}, [("column", None, "h02")]),
    ({}, []),
])
def test_c4_delay_matrix_names_the_link_the_source_or_the_destination(fault, expect):
    from analysis.telemetry import links

    rng = np.random.default_rng(4)
    hosts = [f"h{i:02d}" for i in range(12)]
    rows = []
    for s in hosts:
        for d in hosts:
            if s == d:
                continue
            delay = 20.0 * (1 + 0.03 * rng.standard_normal())
            if fault.get("link") == (s, d) or fault.get("src") == s or fault.get("dst") == d:
                delay *= 3
            rows.append({"job_id": "j1", "host": s, "metric": f"rdma_write_delay_us@{d}", "value": delay})
    cells = links.peer_matrix(pl.DataFrame(rows))
    got = links.localise(cells)
    assert [(k, s, d) for k, s, d in got.select("kind", "src_host", "dst_host").iter_rows()] == expect


def test_models_trained_side_by_side_are_each_their_own():
    """vae.train_many packs models into one block-diagonal network: each block computes its own model (the
    layout round-trips), and each model trained packed learns what it learns alone (only its noise draws differ)."""
    import torch

    from analysis.telemetry import vae

    rng = np.random.default_rng(4)
    singles = []
    for n_inputs in (1, 1, 3):
        torch.manual_seed(len(singles))
        singles.append(vae.LstmVae(n_inputs))
    packed, _ = vae._pack(singles)
    xs = [torch.from_numpy(rng.random((20, 6, n)).astype("float32")) for n in (1, 1, 3)]
    with torch.no_grad():
        mu, logvar = packed.encode(torch.cat(xs, dim=2))
        for j, (model, x) in enumerate(zip(singles, xs)):
            alone_mu, alone_logvar = model.encode(x)
            assert torch.allclose(mu[:, 8 * j:8 * (j + 1)], alone_mu, atol=1e-6)
            assert torch.allclose(logvar[:, 8 * j:8 * (j + 1)], alone_logvar, atol=1e-6)
    data = [rng.random((1500, 6)).astype("float32"), rng.random((1500, 6)).astype("float32") ** 3,
            rng.random((1500, 6, 2)).astype("float32")]
    together = vae.train_many([(data[0], 1), (data[1], 1), (data[2], 2)], epochs=4)
    for (x, n), model in zip([(data[0], 1), (data[1], 1), (data[2], 2)], together):
        alone = vae.train(x, n_inputs=n, epochs=4)
        a, b = vae.embed(model, x[:300], n), vae.embed(alone, x[:300], n)
        assert np.corrcoef(a.ravel(), b.ravel())[0, 1] > 0.95


def test_aegis_flags_each_machine_at_the_sample_its_run_reaches_the_limit():
    rng = np.random.default_rng(2)
    flagged = 0
    for _ in range(20):
        v = rng.random((3, 10, 300))
        v[rng.random(v.shape) < 0.05] = np.nan
        v[:, int(rng.integers(10)), 80:80 + int(rng.integers(0, 150))] += 3
        frame = frames.JobFrame("j", [f"h{i}" for i in range(10)], ["a", "b", "c"], np.datetime64("2024-01-01"),
                                10.0, v)
        x = frame.values  # the rule spelled out: per metric and machine, the first run of `need` flagged samples
        with np.errstate(invalid="ignore"):
            out = np.abs(x - np.nanmean(x, axis=1, keepdims=True)) > CFG.aegis_sigma * np.nanstd(x, axis=1, keepdims=True)
        need = int(round(CFG.aegis_s / frame.interval_s))
        expected = []
        for m in range(3):
            for h in range(10):
                run = 0
                for t, flag in enumerate(out[m, h]):
                    run = run + 1 if flag else 0
                    if run == need:
                        expected.append((h, m, t - need + 1, t))
                        break
        assert detect.aegis_flags(frame, CFG) == expected
        flagged += bool(expected)
    assert 0 < flagged < 20  # frames with and without a flagged machine
