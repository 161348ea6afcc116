"""An open loop simulated: Poisson arrivals at a rate through the engine's scheduler, iteration by iteration.

The same scheduler as the closed loop (`advisor/physics/batching.py` `_Loop`: the running cap, KV blocks,
the token budget, chunked or whole-prompt prefill, first come first served), with requests arriving at
seeded Poisson times instead of when a client's last one finishes. Arrivals are in time, so each stretch
of identical iterations is priced as it is scheduled (the step model) and cut short at the next arrival.
Bounded (a few hundred requests) and seeded, so an answer is the same every run.
"""

from __future__ import annotations

import math
import random
from dataclasses import replace

from advisor.physics.batching import (
    ClosedRun,
    EngineLimits,
    Latency,
    LoadStats,
    Schedule,
    _Loop,
    seq_tokens,
)
from advisor.physics.serving import Efficiency, Replica, StepPricer, pricer_of

OPEN_LOOP_REQUESTS = 600
MIN_KEPT = 0.3
"""Least share of the requests the figures keep (see steady)."""
SEED = 20260


class _OpenLoop(_Loop):
    """The scheduler fed by arrival times; it keeps a clock and prices iterations as it goes."""

    def __init__(
        self, lim: EngineLimits, cap: int, kv: float, lengths: list[tuple[int, int]], times: list[float]
    ) -> None:
        super().__init__(lim, cap, kv, lengths, 0)
        self.times, self.clock = times, 0.0
        self.first_s, self.done_s = [math.nan] * len(times), [math.nan] * len(times)
        self.spent: list[float] = []  # seconds of each recorded run of iterations

    def _next_request(self) -> None:  # an open loop's next request comes at its own time, not at a finish
        pass

    def arrive(self) -> None:
        while self.issued < len(self.times) and self.times[self.issued] <= self.clock:
            self.s.arrival[self.issued] = self.it
            self.waiting.append(self.issued)
            self.issued += 1

    def run(self, price: StepPricer) -> None:
        """Serve every request: iterations priced by `price(b, ctx, p, ctx_p)`, the clock jumping over idle
        spells to the next arrival."""
        while True:
            self.arrive()
            self._admit()
            if not self.prefill and not self.decoding:
                if self.issued >= len(self.times):
                    return
                self.clock = self.times[self.issued]
                continue
            plan, count, decodes = self.plan()
            tau = price(*self.makeup(plan, 1, decodes))
            if self.issued < len(self.times) and tau > 0:  # stop at the next arrival
                count = max(1, min(count, math.ceil((self.times[self.issued] - self.clock) / tau)))
            if count > 1:  # priced at the stretch's mean context
                tau = price(*self.makeup(plan, count, decodes))
            before = {r for r in range(len(self.times)) if self.s.first[r] < 0}
            self._record(count, plan, decodes)
            self.clock += count * tau
            self.spent.append(count * tau)
            self._stamp(before)

    def _stamp(self, before: set[int]) -> None:
        for r in before:
            if self.s.first[r] >= 0:
                self.first_s[r] = self.clock
        for r, it in enumerate(self.s.done):
            if it >= 0 and math.isnan(self.done_s[r]):
                self.done_s[r] = self.clock


def steady(loop: _OpenLoop) -> list[int]:
    """The requests that arrive in the steady state: after one median request lifetime from the first
    arrival (the batch has filled) and one before the last (the replica has not begun to drain); the
    middle half when that leaves under MIN_KEPT of them."""
    n = len(loop.times)
    life = sorted(loop.done_s[r] - loop.times[r] for r in range(n))[n // 2]
    lo, hi = loop.times[0] + life, loop.times[-1] - life
    keep = [r for r in range(n) if lo <= loop.times[r] <= hi]
    return keep if len(keep) >= MIN_KEPT * n else list(range(n // 4, n - n // 4))


def poisson_times(rate: float, n: int, seed: int = SEED) -> list[float]:
    """`n` arrival times of a Poisson process at `rate` per second (seeded)."""
    rng, t, out = random.Random(seed), 0.0, []
    for _ in range(n):
        t += rng.expovariate(rate)
        out.append(t)
    return out


def simulate_open(
    rep: Replica,
    eff: Efficiency,
    lim: EngineLimits,
    cap: int,
    kv: float,
    lengths: list[tuple[int, int]],
    rate: float,
) -> LoadStats | None:
    """LoadStats of `lengths` arriving at `rate` requests/s (None when not one request fits)."""
    if cap < 1 or not lengths or seq_tokens(lim, *lengths[0]) > kv or rate <= 0:
        return None
    times = poisson_times(rate, len(lengths))
    loop = _OpenLoop(lim, cap, kv, lengths, times)
    loop.run(pricer_of(rep, eff))
    return _stats(loop, loop.s, eff, rate)


FINITE_RUNS = 4
"""Seeded draws a finite run is averaged over: the harness fixes the run's length, not how its requests
cluster, and near capacity one draw's clusters move the first tokens from an idle replica to a queue."""


def finite_open(
    rep: Replica,
    eff: Efficiency,
    lim: EngineLimits,
    cap: int,
    kv: float,
    lengths: list[tuple[int, int]],
    rate: float,
    quantile: float,
) -> tuple[Latency, LoadStats] | None:
    """A run of len(`lengths`) requests sent at Poisson times at `rate`, timed as vllm's bench serve times a
    number of prompts at a request rate (vllm-project/vllm@def9ce85ba1079af970a58ed3d42dd861ae35d58:
    vllm/benchmarks/serve.py `get_request`: exponential gaps at the rate, their running sum scaled so the
    last request is sent at N / rate, "to stabilize the throughput data from different random seeds";
    `benchmark`: the duration runs from the start to the last request's end; `calculate_metrics`:
    output_throughput = every output token / that duration, TTFT and TPOT over every request). The run ends
    as its queue drains, so a short run at a high rate completes fewer tokens per second than the steady
    state (rate x output), and its first requests find an idle replica. FINITE_RUNS seeded draws, every
    request of each counted once and the throughput their tokens over their durations. (Latency at the
    percentile, LoadStats); None when not one request fits."""
    if cap < 1 or not lengths or seq_tokens(lim, *lengths[0]) > kv or rate <= 0:
        return None
    price = pricer_of(rep, eff)
    ttft: list[float] = []
    tpot: list[float] = []
    e2e: list[float] = []
    gaps: list[tuple[float, float]] = []
    duration = running = waiting = busy = clocks = 0.0
    for k in range(FINITE_RUNS):
        drawn = poisson_times(rate, len(lengths), SEED + k)
        times = [t * len(lengths) / rate / drawn[-1] for t in drawn]  # the last sent at N / rate
        loop = _OpenLoop(lim, cap, kv, lengths, times)
        loop.run(price)
        n = len(lengths)
        ttft += [loop.first_s[r] - times[r] + eff.request_s for r in range(n)]
        ends = [loop.done_s[r] - times[r] + eff.request_s for r in range(n)]
        e2e += ends
        tpot += [(loop.done_s[r] - loop.first_s[r]) / (o - 1) for r, (_, o) in enumerate(lengths) if o > 1]
        for run, spent in zip(loop.s.runs, loop.spent, strict=True):
            if run.batch > 0:
                gaps.append((spent / run.count, run.count * run.batch))
            running += spent * (run.batch + run.waiting - run.queued)
            waiting += spent * run.queued
        duration += max(ends[r] + times[r] for r in range(n))  # the last request's end
        busy += sum(r.count * r.batch for r in loop.s.runs) / max(loop.it, 1) / FINITE_RUNS
        clocks += loop.clock
    out = float(FINITE_RUNS * sum(o for _, o in lengths))
    priced = ClosedRun(ttft, tpot, duration, out, busy, gaps, e2e)
    clocks = clocks or 1.0
    stats = replace(
        priced.stats(0), loop="open", concurrency=None, running=running / clocks, waiting=waiting / clocks
    )
    return priced.latency(quantile), stats


def _stats(loop: _OpenLoop, sched: Schedule, eff: Efficiency, rate: float) -> LoadStats:
    """The figures of the requests after the warm-up; running and waiting averaged over the clock."""
    keep = steady(loop)
    lengths = sched.lengths
    ttft = [loop.first_s[r] - loop.times[r] + eff.request_s for r in keep]
    e2e = [loop.done_s[r] - loop.times[r] + eff.request_s for r in keep]
    tpot = [(loop.done_s[r] - loop.first_s[r]) / (lengths[r][1] - 1) for r in keep if lengths[r][1] > 1]
    gaps, running, waiting = [], 0.0, 0.0
    for run, spent in zip(sched.runs, loop.spent, strict=True):
        if run.batch > 0:
            gaps.append((spent / run.count, run.count * run.batch))
        running += spent * (run.batch + run.waiting - run.queued)
        waiting += spent * run.queued
    span = max(loop.done_s[r] for r in keep) - loop.times[keep[0]]
    out_tokens = sum(lengths[r][1] for r in keep)
    stats = ClosedRun(ttft, tpot, span, out_tokens, 0.0, gaps, e2e).stats(0)
    clock = loop.clock or 1.0
    return LoadStats(
        loop="open",
        concurrency=None,
        rate=rate,
        output_tok_s=rate * sum(o for _, o in lengths) / len(lengths),
        running=running / clock,
        waiting=waiting / clock,
        ttft=stats.ttft,
        tpot=stats.tpot,
        itl=stats.itl,
        e2e=stats.e2e,
        means=stats.means,
    )
