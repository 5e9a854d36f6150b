"""Is a cluster getting worse? Its infrastructure failure rate over the last 30 days against the 30 before.

Failures are rare events: a cluster with 3 failures one month and 5 the next has not necessarily changed. Under
equal rates, the recent window's share of all failures of both windows is binomial with the recent window's share
of the node-days (the conditional test of two Poisson rates); a change is called only when chance would give one
as large less than ``alpha`` of the time."""
from __future__ import annotations

from dataclasses import dataclass

WINDOW_DAYS = 30  # as the cluster report's rolling rate (reports/render.py RATE_WINDOW_DAYS)
ALPHA = 0.05


@dataclass(frozen=True)
class Window:
    failures: int
    node_days: float

    @property
    def rate(self) -> float | None:
        """Failures per 1,000 node-days; None without runtime."""
        return 1000 * self.failures / self.node_days if self.node_days else None


def verdict(recent: Window, before: Window, alpha: float = ALPHA) -> str:
    """'worse', 'better' or 'steady' (no change beyond what chance gives)."""
    from scipy import stats  # here: scipy.stats takes seconds to import, and most callers never judge a trend

    n = recent.failures + before.failures
    if n == 0 or not recent.node_days or not before.node_days:
        return "steady"
    share = recent.node_days / (recent.node_days + before.node_days)
    if stats.binom.sf(recent.failures - 1, n, share) < alpha:  # P(at least this many recent failures)
        return "worse"
    if stats.binom.cdf(recent.failures, n, share) < alpha:  # P(at most this many)
        return "better"
    return "steady"
