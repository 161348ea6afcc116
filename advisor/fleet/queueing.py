"""Provides the closed forms the simulator is checked against: Erlang C (M/M/c) and the pre-emptive priority
M/M/1 queue, and the simulated runs that reproduce them."""

from __future__ import annotations

from dataclasses import dataclass

from advisor.fleet.cluster import Pool
from advisor.fleet.power import NightCap
from advisor.fleet.sim import JobSpec, Simulation


def erlang_c(c: int, lam: float, mu: float) -> float:
    """Probability that an arrival waits in an M/M/c queue (offered load lam/mu < c)."""
    a = lam / mu
    if a >= c:
        raise ValueError("the queue is unstable: offered load must be below the servers")
    term, total = 1.0, 1.0
    for k in range(1, c):
        term *= a / k
        total += term
    last = term * a / c / (1.0 - a / c)
    return last / (total + last)


def mmc_wait(c: int, lam: float, mu: float) -> float:
    """Mean time in queue of M/M/c: C(c, a) / (c mu - lam)."""
    return erlang_c(c, lam, mu) / (c * mu - lam)


def priority_mm1_sojourn(lams: tuple[float, ...], mu: float) -> tuple[float, ...]:
    """Mean time in system per class of a pre-emptive-resume priority M/M/1 queue (class 0 highest), all
    classes exponential with rate mu: T_k = (1/mu) / (1 - s_{k-1}) + R_k / ((1 - s_{k-1})(1 - s_k)),
    s_k the load of classes 0..k and R_k = sum_{i<=k} lam_i / mu^2 (Kleinrock, vol. 2, 3.8)."""
    out, above = [], 0.0
    residual = 0.0
    for lam in lams:
        upto = above + lam / mu
        residual += lam / mu**2
        out.append((1.0 / mu) / (1.0 - above) + residual / ((1.0 - above) * (1.0 - upto)))
        above = upto
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Check:
    """One simulated figure against its closed form."""

    name: str
    simulated: float
    exact: float
    jobs: int

    @property
    def error(self) -> float:
        """Relative error of the simulation."""
        return abs(self.simulated - self.exact) / self.exact


def simulate_mmc(c: int, lam: float, mu: float, hours: float, seed: int) -> Check:
    """An M/M/c queue run through the fleet simulator: c one-GPU servers, regular class, no cap, no failures.
    Service times are exponential with mean 1/mu; the mean wait is measured from arrival to start."""
    pool = Pool("mmc", "gpu", node_size=1, nodes=c)
    spec = JobSpec("mmc", "check", cls=2, pool="mmc", gpus=1, work_h=1.0 / mu, per_hour=lam, exponential=True)
    tally = Simulation([pool], [spec], seed=seed, hours=hours, cap=NightCap()).run()
    waits = tally.waits[2]
    return Check(f"M/M/{c} mean wait", sum(waits) / len(waits), mmc_wait(c, lam, mu), len(waits))


def simulate_priority(lams: tuple[float, float], mu: float, hours: float, seed: int) -> list[Check]:
    """A two-class pre-emptive priority M/M/1 queue: urgent (class 0) pre-empts regular (class 1) and the
    pre-empted job resumes where it stopped (a checkpoint at every instant, no restart time)."""
    pool = Pool("pq", "gpu", node_size=1, nodes=1)
    specs = [
        JobSpec(
            f"class-{k}",
            "check",
            cls=k,
            pool="pq",
            gpus=1,
            work_h=1.0 / mu,
            per_hour=lam,
            exponential=True,
            keep_progress=True,
        )
        for k, lam in enumerate(lams)
    ]
    tally = Simulation([pool], specs, seed=seed, hours=hours, cap=NightCap()).run()
    exact = priority_mm1_sojourn(lams, mu)
    return [
        Check(f"priority M/M/1 class {k} mean time in system", sum(s) / len(s), exact[k], len(s))
        for k, s in ((k, tally.sojourns[k]) for k in range(len(lams)))
    ]
