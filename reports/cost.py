"""Money in the report (issue 34): goodput.yaml's price per GPU-hour (analysis/ingest/options.py) turns GPU-hours
into cost: the partition's price where one is given, else the default. Without a price the report shows GPU-hours
only, and no currency anywhere."""
from __future__ import annotations

import polars as pl

SYMBOLS = {"USD": "$", "EUR": "€", "GBP": "£", "JPY": "¥"}
WEEKS, ACCOUNTS = 8, 8  # the trend: the last weeks, the accounts that lost most over them


def money(gpu_hours, price: dict | None, partition: str | None = None) -> str:
    """'$1,213' (or '1,213 CHF'): GPU-hours x the partition's price, else the default; '' without a price."""
    if not price or gpu_hours is None:
        return ""
    amount = gpu_hours * per_hour(price, partition)
    sym = SYMBOLS.get(price["currency"])
    return f"{sym}{amount:,.0f}" if sym else f"{amount:,.0f} {price['currency']}"


def per_hour(price: dict, partition: str | None = None) -> float:
    return price["partitions"].get(partition, price["per_gpu_hour"]) if partition else price["per_gpu_hour"]


def priced(frame: pl.DataFrame, price: dict | None, hours: str = "lost_gpu_hours") -> pl.DataFrame:
    """``frame`` with a ``cost`` column (``hours`` x its partition's price), or as it is without a price."""
    if not price or frame.height == 0:
        return frame
    rate = pl.col("partition").replace_strict(price["partitions"], default=price["per_gpu_hour"], return_dtype=pl.Float64)
    return frame.with_columns(cost=pl.col(hours) * rate)


def account_trend(weekly: pl.DataFrame, price: dict | None) -> dict | None:
    """The accounts that lost most over the last WEEKS weeks, each week's loss (cost with a price, else GPU-hours):
    {"weeks": [...], "rows": [{"account", "values": [...], "total"}], "unit": "cost" | "gpu_hours"}."""
    if weekly.height == 0:
        return None
    weekly = priced(weekly, price)
    value = "cost" if price else "lost_gpu_hours"
    weeks = sorted(weekly["week"].unique().to_list())[-WEEKS:]
    recent = weekly.filter(pl.col("week").is_in(weeks)).group_by("account", "week").agg(pl.col(value).sum())
    top = (recent.group_by("account").agg(pl.col(value).sum().alias("total"))
           .sort(["total", "account"], descending=[True, False]).head(ACCOUNTS))
    rows = []
    for account, total in top.iter_rows():
        per = dict(recent.filter(pl.col("account") == account).select("week", value).iter_rows())
        rows.append({"account": account, "values": [per.get(w, 0.0) for w in weeks], "total": total})
    return {"weeks": weeks, "rows": rows, "unit": "cost" if price else "gpu_hours"}
