"""Megatron-Core's recompute modules (--recompute-modules): the input, its refusals, the activation bytes each
module frees, the work it runs again, and the launch file's flag."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.job.config_check import check_config
from advisor.job.inputs import RunConfig, Workload
from advisor.job.layout import Layout
from advisor.job.resolve import resolve_job
from advisor.physics.memory import TrainingMemoryModel
from advisor.physics.recompute_modules import forward_flops_per_token
from advisor.physics.speed import training_flops_per_item
from advisor.question.errors import InputError
from advisor.question.vocab import RECOMPUTE_MODULES


def _job(knowledge, model: str, modules: tuple[str, ...] | None, stack: str = "megatron", seq: int = 4096):
    config = RunConfig(stack=stack, recompute_modules=modules)  # type: ignore[arg-type]
    workload = Workload(model=model, kind="pretrain", tokens=1e9, seq_len=seq, config=config)
    return resolve_job(knowledge, workload, need_data=False)


def _kept(knowledge, job, gpu: str = "h100-sxm", precision: str = "bf16") -> tuple[float, float]:
    model = TrainingMemoryModel(job, knowledge.gpu(gpu), precision, knowledge.assumptions)
    return model.per_layer["selective"]


def test_megatrons_module_list_is_the_accepted_set() -> None:
    # NVIDIA/Megatron-LM@d98e8a64ddf3 transformer_config.py __post_init__ allowed_modules, as listed there.
    assert set(RECOMPUTE_MODULES) == {
        "core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe", "shared_experts",
        "gdn_norm_out", "gdp_in_proj", "gdp_qkv", "mhc",
    }  # fmt: skip


def test_a_bad_module_exits_2_in_one_line_naming_it_and_the_accepted_set() -> None:
    flags = ["--model", "qwen3-30b-a3b", "--gpu", "h100-sxm", "--stack", "megatron"]
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "advisor.cli.main",
            "predict",
            *flags,
            "--recompute-modules",
            "layernorm,moe_actt",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])},
        timeout=120,
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "'moe_actt'" in lines[0]
    assert all(m in lines[0] for m in RECOMPUTE_MODULES)


def test_modules_are_selective_recomputation_and_only_megatrons(knowledge) -> None:
    assert RunConfig(recompute_modules=("layernorm",)).recompute == "selective"
    with pytest.raises(InputError, match="not recompute full"):
        RunConfig(recompute="full", recompute_modules=("layernorm",))
    with pytest.raises(InputError, match="has none"):
        check_config(_job(knowledge, "qwen3-30b-a3b", ("layernorm",), stack="torchtitan"))
    with pytest.raises(InputError, match="dense"):  # Megatron: moe_act only with grouped-GEMM experts
        check_config(_job(knowledge, "llama-3.1-8b", ("moe_act",)))
    with pytest.raises(InputError, match="multi-latent"):
        check_config(_job(knowledge, "llama-3.1-8b", ("mla_up_proj",)))
    with pytest.raises(InputError, match="does not model"):
        check_config(_job(knowledge, "qwen3-30b-a3b", ("gdn_norm_out",)))
    check_config(_job(knowledge, "qwen3-30b-a3b", ("layernorm", "moe_act", "core_attn")))


def test_layernorm_and_moe_act_free_the_norm_output_and_the_expert_activation(knowledge) -> None:
    # Qwen3-30B-A3B: every layer MoE, hidden 2048, 8 of 128 experts of width 768, no shared expert. The
    # pre-MLP norm's output (2h) and the activation's output, the second expert GEMM's input (2 bytes per
    # routed unit), go; with FlashAttention the attention core keeps nothing of its own to free.
    s = 4096
    default, _ = _kept(knowledge, _job(knowledge, "qwen3-30b-a3b", None, seq=s))
    job = _job(knowledge, "qwen3-30b-a3b", ("core_attn", "layernorm", "moe_act"), seq=s)
    arch = job.arch
    assert arch is not None and arch.moe_layers == arch.layers and not arch.shared_experts
    kept, working = _kept(knowledge, job)
    freed = 2 * arch.hidden + 2 * arch.expert_ffn * arch.experts_per_token
    assert default - kept == pytest.approx(freed * s)
    assert working == pytest.approx(2 * arch.expert_ffn * arch.experts_per_token * s)  # one module at a time
    # Under FP8 the FP8 copies the block count holds go (one byte per value).
    fp8_default, _ = _kept(knowledge, _job(knowledge, "qwen3-30b-a3b", None, seq=s), precision="fp8")
    fp8_kept, _ = _kept(knowledge, job, precision="fp8")
    assert fp8_default - fp8_kept == pytest.approx(freed / 2 * s)


def test_a_dense_mlp_frees_its_activations_and_keeps_its_input(knowledge) -> None:
    # Megatron's dense MLP checkpointed (recompute_mlp): its fused norm's output (2h) and the fused SwiGLU's
    # input and output (6f) go; the dense layer spec has no separate norm, so layernorm frees nothing.
    s = 8192
    default, _ = _kept(knowledge, _job(knowledge, "llama-3.1-8b", None, seq=s))
    mlp, _ = _kept(knowledge, _job(knowledge, "llama-3.1-8b", ("mlp",), seq=s))
    norm, _ = _kept(knowledge, _job(knowledge, "llama-3.1-8b", ("layernorm",), seq=s))
    assert default - mlp == pytest.approx((2 * 4096 + 6 * 14336) * s)
    assert norm == pytest.approx(default)


def test_a_whole_moe_layer_subsumes_its_activation_and_shared_experts(knowledge) -> None:
    moe, _ = _kept(knowledge, _job(knowledge, "qwen3-30b-a3b", ("moe",)))
    both, _ = _kept(knowledge, _job(knowledge, "qwen3-30b-a3b", ("moe", "moe_act", "shared_experts")))
    act, _ = _kept(knowledge, _job(knowledge, "qwen3-30b-a3b", ("moe_act",)))
    assert both == pytest.approx(moe) and moe < act


def test_the_step_runs_the_recomputed_modules_forward_again(knowledge) -> None:
    a = knowledge.assumptions
    layout = Layout(count=8, nodes=1, node_size=8, precision="bf16", dp=8, recompute="selective")
    plain = _job(knowledge, "qwen3-30b-a3b", None)
    base = plain.train_flops_per_item
    selective = training_flops_per_item(plain, layout, a)
    assert selective == pytest.approx(base * (1 + a.activations["selective_recompute_flops"].value))
    # Norm and activation: memory-bound, no FLOPs; without core_attn, not the attention's recomputation.
    norm_act = _job(knowledge, "qwen3-30b-a3b", ("layernorm", "moe_act"))
    assert training_flops_per_item(norm_act, layout, a) == base
    moe = _job(knowledge, "qwen3-30b-a3b", ("moe",))
    arch = moe.arch
    assert arch is not None
    experts = arch.moe_layers * 2 * (3 * arch.hidden * arch.expert_ffn * arch.experts_per_token)
    router = arch.moe_layers * 2 * arch.hidden * arch.experts
    assert forward_flops_per_token(arch, ("moe",)) == pytest.approx(experts + router)
    assert training_flops_per_item(moe, layout, a) == pytest.approx(base + experts + router)


def test_the_composed_layer_prices_the_modules_again(knowledge) -> None:
    from advisor.physics.step_ops import ATTN, GEMM, MEM, ComposedStep, _Shape

    gpu = knowledge.gpu("h100-sxm")
    fabric = knowledge.assumptions.fabric[gpu.fabric]

    def layer(modules: tuple[str, ...] | None, recompute: str = "selective"):
        job = _job(knowledge, "qwen3-30b-a3b", modules)
        step = ComposedStep(job, gpu, fabric, knowledge.assumptions, (1.0, 1.0, 0.0, 1.0))
        return step.layer(_Shape("bf16", 1, 1, 1, recompute, 8, 8), True).seconds

    none, core = layer(None, "none"), layer(None)
    norm_act, whole = layer(("layernorm", "moe_act")), layer(("moe",))
    assert core[ATTN] > none[ATTN] and norm_act[ATTN] == pytest.approx(none[ATTN])
    assert norm_act[GEMM] == pytest.approx(none[GEMM]) and norm_act[MEM] > none[MEM]
    assert whole[GEMM] > none[GEMM] and whole[MEM] > norm_act[MEM]


def test_the_launch_file_writes_the_modules() -> None:
    from advisor.ops.launch import megatron_args, shell_args
    from advisor.ops.plan_facts import PlanFacts

    base = dict(gpu="h100-sxm", count=16, nodes=2, precision="bf16", tp=2, pp=1, dp=8, sharding="zero1")
    run = dict(micro_batch=1, grad_accum=8, hours_p50=1.0)
    plan = PlanFacts(**base, recompute="selective", recompute_modules=("layernorm", "moe_act"), **run)
    line = shell_args(megatron_args(plan))
    assert "--recompute-granularity selective --recompute-modules layernorm moe_act" in line
    unstated = PlanFacts(**base, recompute="selective", **run)
    assert "--recompute-modules" not in shell_args(megatron_args(unstated))


def test_the_benchmark_passes_modules_only_where_a_row_states_them() -> None:
    sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
    import heldout_cli

    said = "the recompute column read as: 'norm, act' = selective recomputation of the layernorm and"
    row = {"recompute": "selective", "assumed": said + " activation modules, 'full' = full"}
    assert heldout_cli.recompute_modules_args(row) == ["--recompute-modules", "layernorm,moe_act"]
    assert heldout_cli.recompute_modules_args({**row, "recompute": "full"}) == []
    assert heldout_cli.recompute_modules_args({"recompute": "selective", "note": "selective"}) == []
    named = {"recompute": "selective", "note": "run with --recompute-modules mlp moe"}
    assert heldout_cli.recompute_modules_args(named) == ["--recompute-modules", "mlp,moe"]
