"""Tests of what an answer says of a global batch the user did not give: the sourced default it starts from,
named among its assumptions with the flag that sets it; nothing when one is given (job/data.py data_size)."""

from __future__ import annotations

from dataclasses import replace

from advisor.job.inputs import RunConfig, Workload
from advisor.job.resolve import resolve_job

TYPED = Workload(model="llama-3.1-8b", kind="pretrain", precision="bf16", seq_len=4096)


def _said(job) -> list[str]:
    return [a.phrase(None) for a in job.assumed if a.field == "global_batch"]


def test_a_defaulted_pretraining_batch_is_said_in_tokens_and_sequences(knowledge) -> None:
    job = resolve_job(knowledge, TYPED, need_data=False)
    tokens = knowledge.assumptions.defaults["pretrain_global_batch_tokens"].value
    said = _said(job)
    assert len(said) == 1
    assert "4M tokens" in said[0] and f"{job.global_batch_seqs:,} sequences of 4,096" in said[0]
    assert job.global_batch_seqs * 4096 >= tokens > (job.global_batch_seqs - 1) * 4096
    assert "1,024 tokens per GPU" in said[0]  # the per-GPU floor the search grows it by


def test_a_defaulted_finetuning_batch_is_said_in_sequences(knowledge) -> None:
    job = resolve_job(knowledge, replace(TYPED, kind="lora"), need_data=False)
    said = _said(job)
    seqs = int(knowledge.assumptions.defaults["finetune_global_batch_seqs"].value)
    assert len(said) == 1 and said[0].startswith(f"global batch {seqs} sequences per optimizer step")


def test_a_given_batch_or_serving_says_nothing(knowledge) -> None:
    for config in (RunConfig(global_batch=256), RunConfig(global_batch_tokens=1_000_000)):
        assert _said(resolve_job(knowledge, replace(TYPED, config=config), need_data=False)) == []
    serving = resolve_job(knowledge, replace(TYPED, kind="inference"), need_data=False)
    assert _said(serving) == []


def test_the_configuration_marks_a_defaulted_llm_batch_default(knowledge) -> None:
    from advisor.answer.predict import predict

    typed = predict(knowledge, TYPED, "a100-80gb-sxm", 8)
    given = predict(knowledge, replace(TYPED, config=RunConfig(global_batch=256)), "a100-80gb-sxm", 8)
    assert typed.configuration["global_batch"].source == "default"
    assert given.configuration["global_batch"].source == "given"
    assert typed.configuration["grad_accum"].source == "chosen"  # what follows from it is the search's
