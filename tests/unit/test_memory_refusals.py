"""Published runs the memory model refused: the mechanisms that made them fit, and what still refuses."""

from __future__ import annotations

import json

import pytest

from advisor.catalog.loader import Knowledge
from advisor.learned.efficiency.dataset import Dataset, shipped_dataset, shipped_runs


@pytest.fixture(scope="module")
def dataset(knowledge: Knowledge) -> Dataset:
    return shipped_dataset(knowledge)


def test_nemo_and_megatron_bridge_runs_train_with_the_distributed_optimizer(knowledge: Knowledge) -> None:
    runs, _ = shipped_runs(knowledge)
    bridge = [r for r in runs if "Megatron-Bridge" in r.software and r.stack == "megatron"]
    assert bridge and {r.zero for r in bridge} <= {1, 3}  # ZeRO-1 (the distributed optimizer) or FSDP
    assert any(r.zero == 3 for r in bridge)  # a row stating Megatron FSDP keeps it
    # Megatron-LM's 2021 runs predate the distributed optimizer (2022): plain DDP.
    sc21 = [r for r in runs if "SC21" in r.software]
    assert sc21 and {r.zero for r in sc21} == {0}


def test_a_published_8b_run_on_8_b200_fits_with_the_distributed_optimizer(dataset: Dataset) -> None:
    rows = [
        s
        for s in dataset.samples
        if s.row.workload == "llama-3.1-8b" and s.row.gpu == "b200" and "Megatron-Bridge" in s.row.software
    ]
    assert rows and all(s.fits for s in rows)  # without it: 246 GB of 191 usable


def test_what_still_refuses_is_what_the_tool_cannot_model(dataset: Dataset) -> None:
    refused = {s.row.origin for s in dataset.samples if s.family == "llm" and not s.fits}
    # stas00's 131k-262k sequences (Liger's fused linear cross entropy is not an input), Llama 3's 405B
    # runs, fms-fsdp's 70B, TinyLlama, and the largest NeMo / Megatron-Bridge recipes (their recompute and
    # offload settings are not in their tables).
    assert "stas00/ml-engineering" in refused
    assert len([s for s in dataset.samples if s.family == "llm" and not s.fits]) <= 32


def test_transformer_engine_fp8_linears_keep_their_inputs_in_one_byte(knowledge: Knowledge) -> None:
    from advisor.job.inputs import RunConfig, Workload
    from advisor.job.resolve import resolve_job
    from advisor.physics.memory import TrainingMemoryModel

    def per_layer(precision: str, stack: str) -> float:
        w = Workload(
            model="gpt3-175b",
            kind="pretrain",
            precision=precision,
            seq_len=2048,
            batch_size=1,
            config=RunConfig(global_batch=2048, stack=stack),
        )
        job = resolve_job(knowledge, w, need_data=False)
        model = TrainingMemoryModel(job, knowledge.gpu("h100-sxm"), precision, knowledge.assumptions)
        return model._full_layer(2048)[0]

    h = 12288
    # GPT-3's QKV, output projection, FC1 and FC2 inputs (h + h + h + 4h per token) kept at 1 byte, not 2.
    assert per_layer("bf16", "megatron") - per_layer("fp8", "megatron") == pytest.approx(7 * h * 2048)
    assert per_layer("bf16", "fsdp") == per_layer("fp8", "fsdp")  # no Transformer Engine: 16-bit inputs


def _predict_8b_pure_bf16(capsys: pytest.CaptureFixture[str], global_batch: int) -> tuple[int, str]:
    from advisor.cli.main import main

    argv = "predict --model llama-3.1-8b --workload finetune --gpu h100-sxm --count 1 --precision bf16"
    argv += " --seq-len 8192 --recompute full --micro-batch 2 --stack hf --no-master-weights --format json"
    code = main([*argv.split(), "--global-batch", str(global_batch)])
    return code, capsys.readouterr().out


def test_a_pure_bf16_8b_full_fine_tune_on_one_80gb_gpu_runs(capsys: pytest.CaptureFixture[str]) -> None:
    # Llama-3.1-8B fully fine-tuned in pure bf16 on one 80 GB H100 (weights, gradients, AdamW states: 64 GB),
    # 2 x 8,192 tokens, checkpointed, no accumulation: the Trainer frees the gradients after each step
    # (zero_grad(set_to_none=True)), so they are not held with the logits' activations; such runs ran (peak
    # 78 GiB). Accumulating four micro-batches keeps the gradients between them: refused.
    code, out = _predict_8b_pure_bf16(capsys, 2)
    assert code == 0
    memory = json.loads(out)["memory"]
    assert memory["fits"] and memory["breakdown"]["gradients"] < 1.0
    assert memory["per_gpu_gb"] < memory["usable_gb"]
    code, _ = _predict_8b_pure_bf16(capsys, 8)
    assert code == 1
