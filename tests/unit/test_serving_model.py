"""The serving model: its data, the step model, capacity and queueing on one model, a reproducible fit."""

from __future__ import annotations

import itertools
import math
import random
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from advisor.learned.serving.data import load_cases
from advisor.learned.serving.evaluate import held_out, scores
from advisor.learned.serving.fit import fit
from advisor.learned.serving.model import ServingModel, initial, load_model
from advisor.learned.serving.observe import observe_model, traits
from advisor.physics.batching import (
    EngineLimits,
    capacity,
    closed_run,
    closed_schedule,
    kv_tokens,
    mixed_iteration_s,
    open_loop,
    prompt_mix,
)
from advisor.physics.serving import (
    Efficiency,
    Hardware,
    Replica,
    Shape,
    iteration_s,
    priced,
    stage_times,
    step_pricer,
)

ROOT = Path(__file__).resolve().parents[2]
H100 = Hardware(
    peak_flops=989e12, bandwidth=3.35e12, memory_bytes=80e9, link_bytes_s=450e9, link_latency_s=8e-6
)
LLAMA_8B = Shape(
    params=8.03e9, active_params=8.03e9, layers=32, hidden=4096, attn_width=4096, kv_heads=8, head_dim=128
)
VLLM = EngineLimits(max_seqs=1024, token_budget=8192)
EFF = Efficiency(memory=0.8, compute=0.6, kv=0.7, step_s=1e-3, per_seq_s=5e-6)


@pytest.fixture(scope="module")
def cases():
    found, _ = load_cases()
    return found


def test_serving_csv_is_what_the_curation_script_writes():
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "curate_serving_benchmarks.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_rows_are_valid_cited_and_cover_every_engine(cases):
    assert len(cases) > 800
    assert {c.engine for c in cases} == {"vllm", "sglang", "trtllm", "lmdeploy", "tgi"}
    assert any(c.vendor == "amd" for c in cases)
    for c in cases:
        assert c.isl > 0 and c.osl > 0 and c.tp >= 1
        assert "@" in c.ref and len(c.ref.split("@")[1].split()[0].split(":")[0]) == 40
        assert (c.output_tok_s or 0) > 0 or c.ttft or c.tpot


def test_small_batch_tp8_pays_per_call_all_reduce_latency_large_batch_does_not():
    one = Replica(LLAMA_8B, H100, tp=1)
    eight = Replica(LLAMA_8B, H100, tp=8)
    # Per GPU, TP8 at batch 1 is far less efficient than TP1 (latency-bound all-reduces)...
    small = iteration_s(one, EFF, 1, 1000) / (8 * iteration_s(eight, EFF, 1, 1000))
    # ...while at a large batch the all-reduce volume is small against the work.
    large = iteration_s(one, EFF, 512, 1000) / (8 * iteration_s(eight, EFF, 512, 1000))
    assert small < 0.45 < large


def test_decode_saturates_with_batch():
    rep = Replica(LLAMA_8B, H100)
    tok_s = [b / iteration_s(rep, EFF, b, 1000) for b in (1, 8, 64, 256, 1024)]
    assert tok_s == sorted(tok_s)
    gains = [b / a for a, b in itertools.pairwise(tok_s)]
    assert gains[0] > 4 and gains[-1] < 1.6  # near-linear at first, then it flattens


def test_ttft_grows_with_load_and_the_replica_refuses_past_capacity():
    rep = Replica(LLAMA_8B, H100)
    sat = capacity(rep, EFF, VLLM, 512, 256, 4e9)
    assert sat is not None
    fractions = (0.1, 0.5, 0.9, 0.999)
    ttft = [open_loop(rep, EFF, VLLM, 512, 256, sat.requests_s * f, 0.5, 4e9) for f in fractions]
    assert all(t is not None for t in ttft)
    values = [t.ttft_s for t in ttft]  # type: ignore[union-attr]
    assert values == sorted(values) and values[-1] > 3 * values[0]
    p99 = open_loop(rep, EFF, VLLM, 512, 256, sat.requests_s * 0.9, 0.99, 4e9)
    assert p99 is not None and p99.ttft_q_s > values[2]
    assert open_loop(rep, EFF, VLLM, 512, 256, sat.requests_s * 1.05, 0.5, 4e9) is None


def test_capacity_and_a_saturated_closed_loop_are_one_model():
    rep = Replica(LLAMA_8B, H100)
    lim = EngineLimits(max_seqs=64, token_budget=8192)
    sat = capacity(rep, EFF, lim, 512, 256, 4e9)
    # Outputs of 129-383 tokens (mean 256): the requests fall out of step, as in a long offline run.
    lengths = [(512, 129 + (i * 97) % 255) for i in range(2048)]
    sched = closed_schedule(lim, 64, kv_tokens(rep, lim, 4e9), lengths, 256)
    assert sat is not None and sched is not None
    run = closed_run(sched, rep, EFF)
    assert run.output_tokens / run.seconds == pytest.approx(sat.output_tok_s, rel=0.1)


def test_a_synchronised_wave_queues_for_its_prompts():
    rep = Replica(LLAMA_8B, H100)
    sched = closed_schedule(VLLM, 1024, kv_tokens(rep, VLLM, 4e9), [(2048, 128)] * 64, 64)
    assert sched is not None
    lat = closed_run(sched, rep, EFF).latency(0.9)
    # 64 x 2048 prompt tokens through an 8192-token budget: the last first token waits ~16 iterations.
    assert lat.ttft_q_s > 4 * lat.ttft_s / 8 and lat.ttft_q_s > 5 * iteration_s(rep, EFF, 0, 0, 2048, 1024)


MIXTRAL = Shape(
    params=46.7e9,
    active_params=12.9e9,
    layers=32,
    hidden=4096,
    attn_width=4096,
    kv_heads=8,
    head_dim=128,
    experts=8,
    experts_per_token=2,
    expert_params=45.1e9,
    expert_ffn=14336,
)
DEEPSEEK_MLA = Shape(
    params=671e9,
    active_params=37e9,
    layers=61,
    hidden=7168,
    attn_width=128 * 576,
    kv_heads=128,
    head_dim=128,
    kv_latent=576,
    experts=256,
    experts_per_token=8,
    expert_params=654e9,
    expert_ffn=2048,
)


def _reference_iteration_s(rep: Replica, eff: Efficiency, b: float, ctx: float, p: float, ctx_p: float):
    return rep.pp * priced(stage_times(rep, b / rep.pp, ctx, p / rep.pp, ctx_p), eff)


def test_the_step_pricer_is_stage_times_priced_to_the_last_bit():
    # The search prices iterations with step_pricer (its invariants worked out once); the figures must be
    # the very floats of stage_times + priced, for dense, MoE and MLA models, any tp/pp, loads with and
    # without prompt tokens, and efficiencies anywhere in (0, 1].
    rng = random.Random(7)
    effs = [EFF, Efficiency(memory=1.0, compute=1.0, kv=1.0, experts=1.0, step_s=0.0, per_seq_s=0.0)]
    effs += [
        Efficiency(
            memory=rng.uniform(0.05, 1),
            compute=rng.uniform(0.05, 1),
            kv=rng.uniform(0.05, 1),
            experts=rng.uniform(0.05, 1),
            step_s=rng.uniform(0, 1e-3),
            per_seq_s=rng.uniform(0, 1e-5),
            comm=rng.uniform(0.5, 2),
        )
        for _ in range(3)
    ]
    compared = 0
    for shape, tp, pp, wb in itertools.product(
        (LLAMA_8B, MIXTRAL, DEEPSEEK_MLA), (1, 2, 8), (1, 4), (2.0, 1.0, 0.5)
    ):
        rep = Replica(shape, H100, tp=tp, pp=pp, weight_bytes=wb, kv_bytes=rng.choice((1.0, 2.0)))
        for eff in effs:
            price = step_pricer(rep, eff)
            for _ in range(40):
                b = rng.choice((0.0, 1.0, 7, rng.uniform(0, 2000)))
                p = rng.choice((0.0, 512, rng.uniform(0, 8192)))
                ctx, ctx_p = rng.uniform(0, 9000), rng.uniform(0, 4000)
                want = _reference_iteration_s(rep, eff, b, ctx, p, ctx_p)
                assert price(b, ctx, p, ctx_p) == want, (shape, tp, pp, eff, b, ctx, p, ctx_p)
                assert iteration_s(rep, eff, b, ctx, p, ctx_p) == want
                compared += 1
    assert compared == 3 * 3 * 2 * 3 * len(effs) * 40


def test_the_mixed_iteration_is_prompt_mix_priced_to_the_last_bit():
    rng = random.Random(11)
    for shape, tp in ((LLAMA_8B, 1), (MIXTRAL, 2)):
        rep = Replica(shape, H100, tp=tp)
        for _ in range(400):
            b, isl = rng.uniform(0, 3000), rng.choice((1, 128, 512, 4096, 20000))
            p, budget, ctx = rng.choice((0.0, rng.uniform(0, 12000))), rng.choice((512, 2048, 8192)), 1e3
            share, chunk = prompt_mix(b, p, isl, budget)
            with_chunk = _reference_iteration_s(rep, EFF, b, ctx, chunk, isl / 2.0) if share else 0.0
            without = _reference_iteration_s(rep, EFF, b, ctx, 0.0, 0.0) if share < 1.0 else 0.0
            want = share * with_chunk + (1.0 - share) * without
            assert mixed_iteration_s(rep, EFF, b, ctx, p, isl, budget) == want


def test_fit_on_a_small_fold_is_reproducible(cases):
    fold = [c for c in cases if c.model == "llama-3.1-8b" and c.engine in ("trtllm", "sglang")][:60]
    a, b = fit(fold, max_nfev=3), fit(fold, max_nfev=3)
    assert a.params == b.params and a.engines == b.engines
    assert ServingModel.from_json(a.to_json()).params == a.params


def test_held_out_evaluation_runs_on_a_fold(cases):
    fold = [c for c in cases if c.model == "llama-3.1-8b" and c.kind in ("offline", "online")][:40]
    rows = held_out(fold, lambda c: c.engine, initial(), evaluations=2)
    s = scores([r for r in rows if r.obs.quantity == "throughput"])
    assert s.rows > 0 and 0 <= s.within_2x <= 1 and math.isfinite(s.baseline_median)


def test_the_shipped_model_matches_its_data_and_names_every_engine():
    from advisor.learned.serving.data import data_hash

    model = load_model()
    assert model is not None
    assert model.meta["data_sha256"] == data_hash(), (
        "serving data changed: rerun python -m advisor.learned.serving.train"
    )
    assert set(model.meta["rows_by_engine"]) == {"vllm", "sglang", "trtllm", "lmdeploy", "tgi"}
    assert set(model.interval) == {"throughput", "ttft", "tpot"}


def test_the_shipped_model_is_within_2x_on_most_rows(cases):
    model = load_model()
    assert model is not None
    pairs = [
        (o.predicted, o.measured)
        for c in cases
        for o in observe_model(model, c)
        if o.quantity == "throughput"
    ]
    within = sum(0.5 <= p / m <= 2.0 for p, m in pairs) / len(pairs)
    assert within > 0.85


def test_an_engine_without_rows_uses_its_stand_in():
    model = ServingModel(initial().params, {"sglang": {"memory": 0.5}}, {}, {})
    assert (
        model.source_engine("vllm") == "sglang"
    )  # vLLM's stand-in is SGLang (knowledge/serving_engines.toml)
    assert model.source_engine("sglang") == "sglang"
    c = traits
    assert c is not None


def test_prediction_modules_do_not_import_sklearn_or_scipy():
    code = (
        "import sys, advisor.learned.serving.model, advisor.physics.batching, advisor.search.serving;"
        "print(any(m.split('.')[0] in ('sklearn', 'scipy', 'numpy') for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.stdout.strip() == "False", out.stderr


def test_an_older_release_measured_runs_under_its_own_defaults():
    from advisor.learned.serving.engines import engine, release

    vllm = engine("vllm")
    assert release("0.6.3.dev116 (ROCm 6.1)") == (0, 6) and release("") is None
    now = vllm.limits("h100-sxm", 80)
    assert (now.max_seqs, now.token_budget) == (1024, 8192)  # answers: the current release (V1)
    v0 = vllm.limits("h100-sxm", 80, "0.6.3.post2.dev308")
    assert (v0.max_seqs, v0.token_budget) == (256, 2048)  # V0: 256 sequences, 2048-token chunks
    rocm = vllm.limits("mi300x", 192, "0.7.3.dev138 (ROCm 6.3)", "amd")
    mla = vllm.limits("h200", 141, "0.7.4.dev181", "nvidia", mla=True)
    assert rocm.token_budget > 100_000 and mla.token_budget > 100_000  # no chunked prefill: whole prompts
    assert vllm.limits("mi300x", 192, "0.10.0 (ROCm 6.4.1 image, AITER)", "amd").max_seqs == 1024


def test_an_engine_measured_only_on_old_releases_keeps_the_average_server_time(cases):
    """vLLM's rows that state a first token are all V0 (before 0.8: the `legacy` trait), so they identify the
    old server's time, which `request_legacy` holds: the engine's own `request` offset, which every answer for
    the current release carries, stays at the engines' average (fit.HELD_RIDGE), while an engine measured on
    its current release (SGLang) keeps a free one."""
    vllm = [c for c in cases if c.engine == "vllm" and c.ttft and c.kind == "online"][:6]
    sglang = [c for c in cases if c.engine == "sglang" and c.ttft and c.kind == "online"][:6]
    assert vllm and sglang and all(traits(c).legacy for c in vllm)
    assert not any(traits(c).legacy for c in sglang)
    model = fit(vllm + sglang, max_nfev=3)
    assert abs(model.engines["vllm"]["request"]) < 1e-3 < abs(model.engines["sglang"]["request"])
    shipped = load_model()
    assert shipped is not None and abs(shipped.engines["vllm"]["request"]) < 1e-3
    old = traits(vllm[0])
    now = replace(old, legacy=False)
    assert shipped.efficiency(now).request_s < shipped.efficiency(old).request_s
