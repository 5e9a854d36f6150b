"""Every job state the simulator writes, as a share of the job instances that ended, against Meta's.

Source: Meta's "Revisiting Reliability in Large-Scale Machine Learning Research Clusters" (docs/methods.md#papers)
§III, Fig. 3 (RSC-1's scheduler job status breakdown by number of jobs):
"60% of scheduled jobs completed. 24% and 0.1% of jobs failed because of FAILED and NODE_FAIL, respectively.
10% of jobs were pre-empted, 2% requeued, 0.1% ran out of memory, and 0.6% timed-out." CANCELLED is the part
of Fig. 3 the sentence leaves, 100 - 96.9 = ~3%. RUNNING and PENDING (still in the system when the period ends)
are not end states and are not in the figure.

Ranges: +-10 points for COMPLETED and +-6 for FAILED and PREEMPTED (the large shares; PREEMPTED 4-16% as issue 21
states it); a factor of 2 for CANCELLED (read off the figure, not given); a factor of 4 for the shares under 3%
(one cluster's figure, given to one digit); NODE_FAIL from 0.03% up to 1% (issue 21; Observation 4: attributed
hardware failures end less than 1% of jobs).

Four seeds of a 256-node cluster for 14 days (~3.5 s each). Each seed's shares must be in range, but for NODE_FAIL,
which is checked pooled: the cluster has 4 lemon nodes, which take ~70% of the faults, so one seed's NODE_FAIL count
rests on which components its lemons have (0 to 12 over seeds 1-12). Measured on seeds 1-12, one by one: PREEMPTED
6.1-10.0%, COMPLETED 62.4-65.4%, FAILED 22.1-23.9%, CANCELLED 2.8-3.4%, REQUEUED 0.62-1.14%, TIMEOUT 0.46-0.64%,
OUT_OF_MEMORY 0.05-0.20%; NODE_FAIL pooled by four (1-4, 5-8, 9-12) 0.049-0.099%. Before issue 21's fix one seed's
PREEMPTED ran from 0% to 12% (seeds 4 and 12 under 0.2%), and the full rsc1 preset gave 2.2% (now 13.9%; NODE_FAIL
0.075%).
"""
from collections import Counter

from analysis.simulate.config import preset
from analysis.simulate.run import simulate

# state: (Meta's share, low, high)
META_STATE_SHARES = {
    "COMPLETED": (0.60, 0.50, 0.70),
    "FAILED": (0.24, 0.18, 0.30),
    "PREEMPTED": (0.10, 0.04, 0.16),
    "CANCELLED": (0.03, 0.015, 0.06),
    "REQUEUED": (0.02, 0.005, 0.08),
    "TIMEOUT": (0.006, 0.0015, 0.024),
    "OUT_OF_MEMORY": (0.001, 0.00025, 0.004),
    "NODE_FAIL": (0.001, 0.0003, 0.01),
}
NOT_ENDED = {"RUNNING", "PENDING"}


def _outside(counts: Counter, states) -> dict:
    ended = sum(counts[s] for s in META_STATE_SHARES)
    shares = {s: counts[s] / ended for s in states}
    return {s: (round(v, 5), META_STATE_SHARES[s][1:]) for s, v in shares.items()
            if not META_STATE_SHARES[s][1] <= v <= META_STATE_SHARES[s][2]}


def test_job_state_shares_are_within_metas_ranges(tmp_path):
    pooled, outside = Counter(), {}
    for seed in (1, 2, 3, 4):
        counts = Counter(simulate(preset("rsc1", nodes=256, days=14, seed=seed, telemetry_jobs=0),
                                  tmp_path / str(seed))["states"])
        assert set(counts) <= set(META_STATE_SHARES) | NOT_ENDED, "a state with no range: add Meta's share for it"
        # jobs still queued or running at the end: a queue that kept growing would show here
        assert sum(counts[s] for s in NOT_ENDED) / sum(counts.values()) < 0.03, (seed, counts)
        outside.update({(seed, s): v for s, v in _outside(counts, set(META_STATE_SHARES) - {"NODE_FAIL"}).items()})
        pooled.update(counts)
    outside.update({("pooled", s): v for s, v in _outside(pooled, META_STATE_SHARES).items()})
    assert not outside, (outside, pooled)
