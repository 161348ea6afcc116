"""TTFT and TPOT of a replica at a request rate, and the largest rate meeting latency targets.

The approximation (stated in every answer that uses it):
  * c replicas share the load evenly: M/G/c is taken as c independent M/G/1 queues (λ/c each), conservative;
  * decoding requests in flight B solve Little's law B = λ x osl x TPOT(B);
  * TPOT(B) = decode_step(B) / η_decode / (1 - ρ_prefill): prefill work (ρ_prefill = λ x prefill time)
    interleaves with decode steps and stretches them;
  * TTFT = prefill / η_prefill + TPOT / 2 (wait for the next iteration) + ρ S / (2 (1 - ρ)) (M/D/1 queueing of
    prefills, S = prefill time, ρ = λ / capacity), which diverges as the load nears capacity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from advisor.learned.serving.model import Config, ServingModel
from advisor.physics.serving import Hardware, Shape, batch_capacity, decode_step_s, prefill_s

APPROXIMATION = (
    "queueing: replicas as independent M/G/1 queues; in-flight sequences by Little's law; "
    "prefill queue M/D/1, TTFT diverges at capacity"
)


@dataclass(frozen=True, slots=True)
class Load:
    """Latency of one replica at a request rate; inf when the rate is at or over capacity."""

    rate: float
    capacity: float
    ttft_s: float
    tpot_s: float
    in_flight: float


def _tpot(cfg: Config, shape: Shape, hw: Hardware, batch: float, rho_p: float, eff_decode: float) -> float:
    step = decode_step_s(shape, hw, cfg.precision, max(batch, 1.0), cfg.isl + cfg.osl / 2.0)
    return step / eff_decode / (1.0 - rho_p)


def capacity(model: ServingModel, cfg: Config, shape: Shape, hw: Hardware) -> float:
    """Requests/s one replica completes when full."""
    return model.max_output_tok_s(cfg, shape, hw) / cfg.osl


def at_rate(model: ServingModel, cfg: Config, shape: Shape, hw: Hardware, rate: float) -> Load:
    """TTFT and TPOT of one replica offered `rate` requests/s (Poisson arrivals)."""
    return _Replica(model, cfg, shape, hw).at(rate)


class _Replica:
    """One replica's rate-independent figures, computed once for the many rates a search tries."""

    __slots__ = ("b_max", "cap", "cfg", "eff_decode", "hw", "s_p", "shape")

    def __init__(self, model: ServingModel, cfg: Config, shape: Shape, hw: Hardware) -> None:
        self.cfg, self.shape, self.hw = cfg, shape, hw
        self.cap = capacity(model, cfg, shape, hw)
        self.s_p = prefill_s(shape, hw, cfg.isl) / model.efficiency(cfg, "prefill")
        self.eff_decode = model.efficiency(cfg, "decode")
        self.b_max = batch_capacity(shape, hw, cfg.precision, cfg.isl, cfg.osl)

    def at(self, rate: float) -> Load:
        """TTFT and TPOT at `rate` requests/s."""
        cfg, shape, hw, cap, s_p, b_max = self.cfg, self.shape, self.hw, self.cap, self.s_p, self.b_max
        return _load(cfg, shape, hw, rate, cap, s_p, b_max, self.eff_decode)


def _load(
    cfg: Config,
    shape: Shape,
    hw: Hardware,
    rate: float,
    cap: float,
    s_p: float,
    b_max: float,
    eff_decode: float,
) -> Load:
    rho_p, rho = rate * s_p, rate / cap if cap > 0 else math.inf
    if rho >= 1.0 or rho_p >= 1.0 or b_max < 1:
        return Load(rate, cap, math.inf, math.inf, math.inf)
    batch = 1.0
    for _ in range(100):  # Little's law fixed point; TPOT rises with B, so this converges from below
        nxt = max(1.0, rate * cfg.osl * _tpot(cfg, shape, hw, batch, rho_p, eff_decode))
        if abs(nxt - batch) < 1e-6 * batch:
            break
        batch = nxt
    if batch > b_max:
        return Load(rate, cap, math.inf, math.inf, batch)
    tpot = _tpot(cfg, shape, hw, batch, rho_p, eff_decode)
    ttft = s_p + tpot / 2.0 + rho * s_p / (2.0 * (1.0 - rho))
    return Load(rate, cap, ttft, tpot, batch)


def largest_rate(
    model: ServingModel, cfg: Config, shape: Shape, hw: Hardware, ttft_s: float | None, tpot_s: float | None
) -> float:
    """The largest requests/s of one replica whose TTFT and TPOT meet the targets (0 when none does)."""
    replica = _Replica(model, cfg, shape, hw)
    cap = replica.cap

    def ok(rate: float) -> bool:
        load = replica.at(rate)
        return (
            math.isfinite(load.ttft_s)
            and (ttft_s is None or load.ttft_s <= ttft_s)
            and (tpot_s is None or load.tpot_s <= tpot_s)
        )

    if cap <= 0 or not ok(cap * 1e-6):
        return 0.0
    lo, hi = cap * 1e-6, cap
    for _ in range(60):
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo
