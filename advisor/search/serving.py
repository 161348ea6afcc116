"""What the planner and predictor ask of the serving model: learned efficiencies and latency at a load."""

from __future__ import annotations

import math
from dataclasses import dataclass

from advisor.learned.efficiency.base import Interval
from advisor.learned.serving.model import DEFAULT_ENGINE, Config, load_model
from advisor.learned.serving.queueing import APPROXIMATION, at_rate, capacity, largest_rate
from advisor.physics.serving import GB, Hardware, Shape


def engine_of(workload: object) -> tuple[str, bool]:
    """The serving engine and whether the user gave it (Workload.config.engine arrives with the config
    work)."""
    given = getattr(getattr(workload, "config", None), "engine", None) or getattr(workload, "engine", None)
    return (str(given), True) if given else (DEFAULT_ENGINE, False)


def _config(job, precision: str, tp: int, engine: str) -> Config | None:
    if job.arch is None:
        return None
    return Config(
        engine=engine,
        precision=precision,
        tp=tp,
        isl=max(job.prompt_tokens, 1),
        osl=max(job.output_tokens, 1),
        moe=job.arch.experts > 1,
    )


@dataclass(frozen=True)
class Learned:
    """Learned decode and prefill efficiencies for one replica shape, and what to tell the user."""

    decode: Interval
    prefill: Interval
    note: str


def learned_efficiency(job, precision: str, tp: int, engine: str) -> Learned | None:
    """Efficiency intervals from the measured-run model, or None (no model, or no transformer shape)."""
    model, cfg = load_model(), _config(job, precision, tp, engine)
    if model is None or cfg is None:
        return None
    eta_d, eta_p = model.efficiency(cfg, "decode"), model.efficiency(cfg, "prefill")
    lo, hi = model.band("throughput")
    tlo, thi = model.band("ttft")  # measured / predicted TTFT; efficiency moves the other way
    rows = model.meta.get("rows_used", "?")
    stand_in = (
        ""
        if model.knows(engine)
        else (f"; no measured {engine} rows, so {DEFAULT_ENGINE}'s efficiencies stand in for it")
    )
    note = (
        f"serving efficiencies learned from {rows} measured runs (knowledge/serving_benchmarks.csv, "
        f"engines: {', '.join(model.meta.get('engines', []))}){stand_in}"
    )
    return Learned(
        Interval(min(1.0, eta_d * lo), eta_d, min(1.0, eta_d * hi)),
        Interval(min(1.0, eta_p / thi), eta_p, min(1.0, eta_p / tlo)),
        note,
    )


def load_figures(
    job,
    gpu,
    precision: str,
    tp: int,
    replicas: int,
    engine: str,
    rate: float | None,
    targets: bool = True,
) -> dict[str, float] | None:
    """Max output tokens/s per GPU, TTFT/TPOT at `rate` (whole deployment) and the largest rate meeting
    targets."""
    model, cfg = load_model(), _config(job, precision, tp, engine)
    from advisor.physics.speed import peak_flops

    peak = peak_flops(gpu, precision)
    if model is None or cfg is None or peak is None:
        return None
    a = job.arch
    shape = Shape(
        params=job.params,
        active_params=job.active_params,
        layers=a.layers,
        hidden=a.hidden,
        heads=a.heads,
        kv_heads=a.kv_heads,
    )
    hw = Hardware(peak_flops=peak, bandwidth=gpu.memory_bw_gbs * GB, memory_bytes=gpu.memory_gb * GB, gpus=tp)
    out = {
        "max_output_tok_s_per_gpu": model.max_output_tok_s(cfg, shape, hw) / tp,
        "capacity_req_s": capacity(model, cfg, shape, hw) * replicas,
    }
    if rate:
        load = at_rate(model, cfg, shape, hw, rate / replicas)
        out |= {"ttft_ms": load.ttft_s * 1000, "tpot_ms": load.tpot_s * 1000}
    ttft = job.ttft_ms / 1000 if job.ttft_ms and targets else None
    tpot = job.tpot_ms / 1000 if job.tpot_ms and math.isfinite(job.tpot_ms) and targets else None
    if ttft or tpot:
        out["max_rate_meeting_targets"] = largest_rate(model, cfg, shape, hw, ttft, tpot) * replicas
    return out


def describe_load(fig: dict[str, float], rate: float | None) -> tuple[str, ...]:
    """The load figures in words, each saying it is learned and how the queueing is approximated."""
    lines = [
        f"learned max throughput {fig['max_output_tok_s_per_gpu']:.0f} output tokens/s per GPU "
        f"(capacity {fig['capacity_req_s']:.2f} req/s)"
    ]
    if rate and "ttft_ms" in fig:
        if math.isfinite(fig["ttft_ms"]):
            lines.append(
                f"at {rate:g} req/s: TTFT {fig['ttft_ms']:.0f} ms, TPOT {fig['tpot_ms']:.1f} ms "
                f"({APPROXIMATION})"
            )
        else:
            lines.append(f"at {rate:g} req/s the deployment is over capacity: latency grows without bound")
    if "max_rate_meeting_targets" in fig:
        lines.append(
            f"largest request rate meeting the latency targets: {fig['max_rate_meeting_targets']:.2f} req/s"
        )
    return tuple(lines)


def serving_source(job, workload: object) -> tuple[str, tuple[str, ...]]:
    """The efficiency source's name for serving answers, and the notes saying what is learned and what is
    not."""
    model = load_model()
    if model is None or job.arch is None:
        return (
            "priors for serving (decode bandwidth, prefill compute; no measured serving data applies)",
            (
                "inference: latencies come from the roofline and efficiency priors (wide intervals), and "
                "queueing is held below the utilisation cap rather than simulated",
            ),
        )
    engine, given = engine_of(workload)
    learned = learned_efficiency(job, "fp8", 1, engine)
    assert learned is not None
    return (
        "learned from measured serving runs (knowledge/serving_model.json)",
        (
            learned.note,
            f"engine {engine}" + ("" if given else " (default; pass an engine to change it)"),
            f"TTFT includes queueing at the offered load ({APPROXIMATION}); priors still used: memory "
            "headroom, KV-cache layout, TP all-reduce cost, the utilisation cap",
        ),
    )
