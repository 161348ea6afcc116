"""Disaggregated serving: prompts on prefill-only replicas, outputs on decode-only replicas (DistServe,
Splitwise, Dynamo), sized with the same step model as a colocated replica.

A decode replica runs iterations of decodes only, so no prompt chunk stretches its per-token time: it takes
the largest batch whose TPOT at the percentile meets the target. A prefill replica runs full prompt batches
of the engine's token budget; its requests queue M/D/1 and their first token waits for the prompt and for the
KV cache's move to a decode replica (over the server's GPU link: prefill and decode replicas share servers).
It wins when the colocated replica must run far below capacity to keep TPOT, i.e. long prompts, short
outputs and a tight per-token target.
"""

from __future__ import annotations

import math

from advisor.physics.batching import Latency, exp_tail_quantile
from advisor.physics.serving import iteration_s
from advisor.search.served import Figures, Served, Targets

Z = {0.5: 0.0, 0.9: 1.2816, 0.99: 2.3263}


def _decode_batch(fig: Figures, isl: int, osl: int, targets: Targets) -> tuple[int, float]:
    """(largest decode batch within the TPOT target at the percentile, its iteration time)."""
    rep, eff = fig.setup.replica, fig.eff
    ctx = isl + osl / 2.0
    z = Z.get(round(targets.quantile, 2), 0.0)
    lo, hi = 0, fig.sat.cap
    while lo < hi:
        mid = (lo + hi + 1) // 2
        tau_q = iteration_s(rep, eff, mid + z * math.sqrt(mid), ctx)
        if targets.tpot_s is None or tau_q <= targets.tpot_s:
            lo = mid
        else:
            hi = mid - 1
    return lo, iteration_s(rep, eff, float(max(lo, 1)), ctx)


def _prefill_rate(fig: Figures, isl: int, targets: Targets) -> tuple[float, float, float]:
    """(largest requests/s of one prefill replica within the TTFT target, service time, KV move time)."""
    rep, eff, lim = fig.setup.replica, fig.eff, fig.setup.limits
    batch = max(1, lim.token_budget // isl)
    service = iteration_s(rep, eff, 0.0, 0.0, batch * isl, isl / 2.0) / batch
    move = isl * rep.kv_per_token_gpu / rep.hw.link_bytes_s
    base = eff.request_s + service + move
    if targets.ttft_s is not None and base > targets.ttft_s:
        return 0.0, service, move
    lo, hi = 0.0, 0.95 / service
    ttft_s, q = targets.ttft_s, targets.quantile
    for _ in range(30):
        rate = (lo + hi) / 2.0
        if ttft_s is None:  # every rate below the cap is within a TTFT target that is not set
            lo = rate
            continue
        rho = rate * service
        wait = rho * service / (2.0 * (1.0 - rho))
        ttft_q = base + exp_tail_quantile(rho, wait / rho, q)
        lo, hi = (rate, hi) if ttft_q <= ttft_s else (lo, rate)
    return lo, service, move


def disaggregated(fig: Figures, isl: int, osl: int, rate_total: float, targets: Targets) -> Served | None:
    """The fewest prefill + decode replicas that serve `rate_total` within the targets (None: impossible)."""
    b, tau = _decode_batch(fig, isl, osl, targets)
    r_prefill, service, move = _prefill_rate(fig, isl, targets)
    if b < 1 or r_prefill <= 0 or osl <= 1:
        return None
    r_decode = b / ((osl - 1) * tau)
    n_prefill = max(1, math.ceil(rate_total / r_prefill - 1e-9))
    n_decode = max(1, math.ceil(rate_total / r_decode - 1e-9))
    rho = rate_total / n_prefill * service
    wait = rho * service / (2.0 * (1.0 - rho))
    base = fig.eff.request_s + service + move
    ttft_q = base + exp_tail_quantile(rho, wait / rho, targets.quantile)
    per_decode = rate_total / n_decode
    batch = per_decode * (osl - 1) * tau
    tpot_q = iteration_s(
        fig.setup.replica,
        fig.eff,
        batch + Z.get(round(targets.quantile, 2), 0.0) * math.sqrt(batch),
        isl + osl / 2.0,
    )
    replicas = n_prefill + n_decode
    share = rate_total / replicas
    load = Latency(targets.quantile, base + wait, tau, ttft_q, tpot_q, batch, share * osl, share, tau, tau)
    best = min(n_prefill * r_prefill, n_decode * r_decode) / replicas
    served = Served(fig, replicas, share, load, best, targets, max(1, round(batch)), alone_of(fig, isl, osl))
    served.prefill_replicas = n_prefill
    return served


def alone_of(fig: Figures, isl: int, osl: int) -> tuple[float, float]:
    rep, eff = fig.setup.replica, fig.eff
    return eff.request_s + iteration_s(rep, eff, 0.0, 0.0, isl, isl / 2.0), iteration_s(
        rep, eff, 1.0, isl + osl / 2.0
    )


__all__ = ["disaggregated"]
