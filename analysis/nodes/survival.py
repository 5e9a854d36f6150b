"""Time to a node's next incident (Anubis §3.3): Cox-Time through pycox on CPU
torch, and Anubis' three baselines. Every model answers the same two
questions for a frame of node status samples: the survival curve on a time
grid (hours), and the expected hours to the next incident up to a cap."""
from __future__ import annotations

import copy
import logging
import tempfile
import warnings
from pathlib import Path

import numpy as np
import polars as pl

from analysis.threads import bound_torch

COVARIATES = ("age_days", "uptime_h", "since_incident_h", "n_all", "n_7d", "n_30d", "n_90d", "gpu_all", "gpu_30d",
              "host_all", "host_30d", "network_all", "network_30d", "storage_all", "mtbi_h")
SEED = 20240301
progress = logging.getLogger("goodput.progress")  # Cox-Time trains for minutes at scale: each network is told


class NotEnoughData(ValueError):
    """Too little history for this model; callers skip it."""


# torchtuples (pycox's trainer) trips two of torch's deprecation warnings on
# every call; they say nothing about the data and bury the CLI's output
warnings.filterwarnings("ignore", category=UserWarning, module="torchtuples")


def expected_hours(surv: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Area under each survival curve (columns) over the grid: the mean time to
    the next incident, restricted to the grid's end (Anubis caps at the trace length)."""
    widths = np.diff(grid, prepend=0.0)[:, None]
    return (surv * widths).sum(axis=0)


class Exponential:
    """A constant incident rate for every node: events / hours at risk."""
    name = "exponential"

    def fit(self, df: pl.DataFrame) -> "Exponential":
        self.rate = max(df["event"].sum(), 1) / max(df["duration_h"].sum(), 1e-9)
        return self

    def rates(self, df: pl.DataFrame) -> np.ndarray:
        return np.full(df.height, self.rate)

    def survival(self, df: pl.DataFrame, grid: np.ndarray) -> np.ndarray:
        return np.exp(-np.outer(grid, self.rates(df)))


class ExponentialPerCount(Exponential):
    """One constant rate per number of past incidents (Anubis Fig. 4); counts
    above ``top`` share a rate, and a count never seen in training takes the overall rate."""
    name = "exponential_per_incident_count"
    top = 5

    def fit(self, df: pl.DataFrame) -> "ExponentialPerCount":
        super().fit(df)
        per = (df.with_columns(k=pl.col("n_all").clip(0, self.top)).group_by("k")
               .agg(ev=pl.col("event").sum(), h=pl.col("duration_h").sum()))
        self.by_count = {k: (ev + 1) / (h + 1 / self.rate) for k, ev, h in per.iter_rows()}  # one pseudo-event each
        return self

    def rates(self, df: pl.DataFrame) -> np.ndarray:
        k = df["n_all"].clip(0, self.top).to_numpy()
        return np.array([self.by_count.get(int(v), self.rate) for v in k])


class ExponentialPerUptime:
    """A rate per hour of uptime: the hazard is piecewise constant over the
    node's uptime (log-spaced bins), estimated from every sample's exposure in
    each bin; a node's survival follows its uptime forward from now."""
    name = "exponential_per_uptime_hour"

    def fit(self, df: pl.DataFrame) -> "ExponentialPerUptime":
        self.edges = np.concatenate([[0.0], np.geomspace(1, 24 * 365 * 5, 40)])
        start = df["uptime_h"].to_numpy().clip(0)
        end = start + df["duration_h"].to_numpy()
        lo, hi = self.edges[:-1], self.edges[1:]
        exposure = (np.minimum(end[:, None], hi) - np.maximum(start[:, None], lo)).clip(0).sum(axis=0)
        events = np.histogram(end[df["event"].to_numpy()], bins=self.edges)[0]
        overall = max(events.sum(), 1) / max(exposure.sum(), 1e-9)
        self.hazard = (events + overall * 24) / (exposure + 24)  # shrunk toward the overall rate by a day's exposure
        return self

    def survival(self, df: pl.DataFrame, grid: np.ndarray) -> np.ndarray:
        start = df["uptime_h"].to_numpy().clip(0)
        return np.exp(-(self._cum(start[None, :] + grid[:, None]) - self._cum(start)[None, :]))

    def _cum(self, u: np.ndarray) -> np.ndarray:
        """Cumulative hazard from uptime 0 to ``u``."""
        widths = np.diff(self.edges)
        cum = np.concatenate([[0.0], np.cumsum(self.hazard * widths)])
        idx = np.clip(np.searchsorted(self.edges, u, side="right") - 1, 0, len(self.hazard) - 1)
        return cum[idx] + self.hazard[idx] * (np.minimum(u, self.edges[-1]) - self.edges[idx])


def _design(df: pl.DataFrame) -> np.ndarray:
    """Covariates on a log scale (hours and counts span orders of magnitude)."""
    return np.log1p(df.select(pl.col(COVARIATES).cast(pl.Float64).clip(0)).to_numpy()).astype("float32")


class CoxTime:
    """Cox-Time (Kvamme et al. 2019) through pycox: small MLPs of the covariates
    and time, each trained with early stopping on a held-out tenth of the
    training samples. Five networks with different seeds are averaged: one
    network's ranking moves by a few points of concordance with its seed (a
    fleet's incidents come from few nodes), the mean of five does not."""
    name = "cox_time"

    min_rows, min_events = 200, 20  # below this a neural network learns nothing a baseline does not
    baseline_sample = 1_500

    def __init__(self, epochs: int = 40, hidden: tuple = (32, 32), seeds: tuple = tuple(range(5)),
                 max_rows: int = 30_000):
        self.epochs, self.hidden, self.seeds, self.max_rows = epochs, hidden, seeds, max_rows

    def fit(self, df: pl.DataFrame) -> "CoxTime":
        from pycox.models import CoxTime as PycoxCoxTime

        if df.height < self.min_rows or df["event"].sum() < self.min_events:
            raise NotEnoughData(f"cox_time needs {self.min_rows} samples and {self.min_events} incidents, "
                                f"has {df.height} and {df['event'].sum()}")
        bound_torch()
        # bounded training time on long histories: at 2,000 nodes x 330 days (119,000 samples) 30,000 of them
        # give the held-out concordance and Brier score of 60,000 (0.609/0.192 against 0.611/0.192) in half the time
        if df.height > self.max_rows:
            rng = np.random.default_rng(SEED)
            df = df[np.sort(rng.choice(df.height, self.max_rows, replace=False))]
        x = _design(df)
        self.mean, self.std = x.mean(axis=0), x.std(axis=0) + 1e-6
        x = (x - self.mean) / self.std
        labtrans = PycoxCoxTime.label_transform()  # one time scaling, shared by the members
        y = labtrans.fit_transform(df["duration_h"].to_numpy().astype("float32"),
                                   df["event"].to_numpy().astype("float32"))
        self.members = []
        for i, seed in enumerate(self.seeds, start=1):
            progress.info("    incident model: training Cox-Time network %d/%d (%s samples, up to %d epochs)", i,
                          len(self.seeds), f"{len(x):,}", self.epochs)
            self.members.append(self._fit_one(x, y, labtrans, seed))
        return self

    def _fit_one(self, x: np.ndarray, y: tuple, labtrans, seed: int):
        import torch
        import torchtuples as tt
        from pycox.models import CoxTime as PycoxCoxTime
        from pycox.models.cox_time import MLPVanillaCoxTime

        torch.manual_seed(seed)
        np.random.seed(seed)  # pycox samples the baseline hazards with numpy's global generator
        rng = np.random.default_rng(seed)
        val = rng.random(len(x)) < 0.1  # the early-stopping set
        if y[1][val].sum() < 2:  # its loss needs incidents: lend it two
            val[rng.choice(np.flatnonzero(y[1] == 1), 2, replace=False)] = True
        net = MLPVanillaCoxTime(x.shape[1], list(self.hidden), batch_norm=True, dropout=0.1)
        from analysis.nodes.coxtime_data import SortedCoxTimeDataset

        model = PycoxCoxTime(net, tt.optim.Adam(0.01), labtrans=labtrans)
        model.make_dataset = SortedCoxTimeDataset  # the same controls, sampled without a Python loop
        # torchtuples checkpoints the best weights to a file: a private temp dir, never the working directory
        with tempfile.TemporaryDirectory(prefix="goodput-coxtime-") as tmp:
            stop = tt.callbacks.EarlyStopping(patience=5, file_path=str(Path(tmp) / "best.pt"))
            model.fit(x[~val], (y[0][~val], y[1][~val]), batch_size=256, epochs=self.epochs, verbose=False,
                      callbacks=[stop], val_data=(x[val], (y[0][val], y[1][val])))
        del model.make_dataset  # pycox's own again: nothing of this module is pickled with the model
        # Cox-Time evaluates its network at every baseline time when it predicts:
        # 1,500 sampled times shared among the members keep scoring a 2,000-node fleet near a second
        model.compute_baseline_hazards(sample=min(int((~val).sum()), self.baseline_sample // len(self.seeds)))
        return model

    # what a fitted member needs only to train (its optimiser, callbacks, logs, the training samples):
    # not saved with the model (analysis.nodes.incident_model), which only scores once loaded
    TRAINING_STATE = ("_optimizer", "log", "train_metrics", "val_metrics", "callbacks", "training_data",
                      "batch_loss", "batch_metrics")

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        if "members" in state:
            state["members"] = [copy.copy(m) for m in state["members"]]
            for member in state["members"]:
                for name in self.TRAINING_STATE:
                    member.__dict__.pop(name, None)
        return state

    def survival(self, df: pl.DataFrame, grid: np.ndarray) -> np.ndarray:
        x = (_design(df) - self.mean) / self.std
        curves = []
        for model in self.members:
            # a baseline sample with no incident in it leaves pycox an empty, object-typed hazard series that fails
            # at predict (an as-of far past the data): no incident seen is a hazard of 0
            model.baseline_hazards_ = model.baseline_hazards_.astype("float64")
            model.baseline_cumulative_hazards_ = model.baseline_cumulative_hazards_.astype("float64")
            times, values = _surv(model, x)
            idx = np.searchsorted(times, grid, side="right") - 1  # step function: the last time at or before t
            curves.append(np.where(idx[:, None] >= 0, values[np.clip(idx, 0, len(times) - 1)], 1.0))
        return np.clip(np.mean(curves, axis=0), 0.0, 1.0)


def _surv(model, x: np.ndarray, batch_size: int = 8224) -> tuple[np.ndarray, np.ndarray]:
    """pycox's predict_surv_df(x) as (times, survival: one column per row of x), the network evaluated at every
    baseline time in one predict call: pycox calls it once per time (some 300 per member, each through its data
    loader), most of a nightly's node models. The same sums as pycox's: exp(g(x, t)) per time, zero where the
    baseline hazard is, times the baseline hazard, summed over the times."""
    base = model.baseline_hazards_
    scaled, hazard = base.index.to_numpy(), base.to_numpy()
    n = len(x)
    xs = np.tile(x, (len(scaled), 1))
    ts = np.repeat(scaled, n).reshape(-1, 1).astype("float32")
    expg = np.exp(_net_output(model.net, xs, ts, batch_size * 8)).reshape(len(scaled), n).astype("float64")
    expg[hazard == 0] = 0.0  # in case exp(g) is inf there
    cumulative = np.cumsum(expg * hazard.reshape(-1, 1), axis=0)
    times = model.labtrans.map_scaled_to_orig(scaled) if model.labtrans is not None else scaled
    return np.asarray(times), np.exp(-cumulative)


def _net_output(net, xs: np.ndarray, ts: np.ndarray, rows: int) -> np.ndarray:
    """g(x, t) of a Cox-Time network for each row, as pycox's predict gives it (the network in eval mode, no
    gradient) without its data loader: batching each row through torchtuples cost more than the network."""
    import torch

    was = net.training
    net.eval()
    out = np.empty(len(xs), dtype=np.float32)
    with torch.no_grad():
        for lo in range(0, len(xs), rows):
            out[lo:lo + rows] = net(torch.from_numpy(xs[lo:lo + rows]), torch.from_numpy(ts[lo:lo + rows])).numpy().ravel()
    net.train(was)
    return out


def all_models() -> list:
    return [CoxTime(), Exponential(), ExponentialPerCount(), ExponentialPerUptime()]
