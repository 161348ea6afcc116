"""Tests of the training stacks: the table covers every `--stack` value and every measured run's stack, a
stack is never paired with a layout it cannot run, a typical stack and recomputation are the defaults, and
traits are read as of the run's date."""

from __future__ import annotations

import csv
import io
import json

import pytest

from advisor.answer.predict import predict
from advisor.catalog.stacks import shipped_stacks, stack_of
from advisor.job.config_check import check_config
from advisor.job.inputs import RunConfig, Workload
from advisor.job.resolve import resolve_job
from advisor.learned.efficiency.runs import Run
from advisor.question.errors import InputError
from advisor.question.vocab import STACKS


def test_every_stack_value_and_every_measured_stack_is_in_the_table(knowledge) -> None:
    stacks = shipped_stacks()
    assert list(STACKS) == sorted(STACKS)  # alphabetical: another branch adds the same names
    for name in STACKS:
        assert name in stacks and not stacks[name].data_only, name
    text = knowledge.root.joinpath("llm_benchmarks.csv").read_text(encoding="utf-8")
    for row in csv.DictReader(io.StringIO(text)):
        assert row["stack"] in stacks, row["stack"]


def test_traits_are_read_as_of_the_runs_date(knowledge) -> None:
    megatron = stack_of(knowledge, "megatron")
    flash, compiled, te_fp8, runtime = megatron.traits("2021-06")
    assert (flash, compiled, te_fp8, runtime) == (0.0, 1.0, 0.0, 0.0)  # April 2021: fused kernels only
    assert megatron.traits() == (1.0, 1.0, 1.0, 1.0)
    run = Run("m", "g", 8, 1, "bf16", 1.0, "tokens/s", "megatron", "x", software="NeMo 24.07 container")
    assert run.month == "2024-07"
    assert stack_of(knowledge, "no-such-stack").id == "fsdp"


def _job(knowledge, **w):
    return resolve_job(knowledge, Workload(**w), need_data=False)


def test_the_default_stack_is_a_typical_one_and_is_said(knowledge) -> None:
    pretrain = _job(knowledge, model="llama-3.1-8b", kind="pretrain")
    assert pretrain.stack == "fsdp"
    assert any(
        "training stack: fsdp" in a.text and "typical PyTorch FSDP" in a.text for a in pretrain.assumed
    )
    finetune = _job(knowledge, model="llama-3.1-8b", kind="finetune")
    assert finetune.stack == "trl"  # as fine-tuning toolkits run it: gradient checkpointing on
    assert any("training stack: trl" in a.text and "checkpointing on" in a.text for a in finetune.assumed)
    # A stated pipeline needs a stack that runs one.
    assert _job(knowledge, model="llama-3.1-70b", kind="finetune", config=RunConfig(pp=4)).stack == "megatron"


def test_a_stated_tensor_parallel_pretraining_with_no_stack_is_pytorchs_own_tp_not_megatrons(
    knowledge,
) -> None:
    # Megatron-Core's overlapped sequence-parallel TP, kernels and runtime are what a run naming it gets;
    # a run that states TP but no stack is answered as PyTorch's own stack runs TP (DTensor beside FSDP2),
    # and says so. A stated pipeline still needs Megatron; a named stack is kept.
    tp = _job(knowledge, model="llama-3.1-8b", kind="pretrain", config=RunConfig(tp=2))
    assert tp.stack == "torchtitan"
    assert any("training stack: torchtitan" in a.text and "DTensor" in a.text for a in tp.assumed)
    assert (
        _job(knowledge, model="llama-3.1-8b", kind="pretrain", config=RunConfig(tp=2, pp=2)).stack
        == "megatron"
    )
    named = _job(knowledge, model="llama-3.1-8b", kind="pretrain", config=RunConfig(tp=2, stack="megatron"))
    assert named.stack == "megatron"


def test_deepspeed_runs_a_stated_tensor_parallelism(knowledge) -> None:
    # DeepSpeed's AutoTP training splits a Hugging Face model's linears beside ZeRO 0-2 (training_stacks).
    job = _job(
        knowledge, model="llama-2-7b", kind="pretrain", config=RunConfig(stack="deepspeed", tp=2, zero=1)
    )
    check_config(job, 8)


def test_a_typed_pretraining_the_fsdp_stack_cannot_run_as_asked_defaults_to_megatron(knowledge) -> None:
    # A mixture of experts needs expert parallelism, which the FSDP stack never chooses; FP8 needs FP8
    # kernels, which it lacks (knowledge/training_stacks.toml): the typed answer must not be a stack that
    # cannot run what was typed. BF16 dense pre-training keeps the typical FSDP stack.
    moe = _job(knowledge, model="qwen3-30b-a3b", kind="pretrain")
    assert moe.stack == "megatron"
    assert any("training stack: megatron" in a.text and "expert parallelism" in a.text for a in moe.assumed)
    fp8 = _job(knowledge, model="llama-3.1-8b", kind="pretrain", precision="fp8")
    assert fp8.stack == "megatron" and any("Transformer Engine" in a.text for a in fp8.assumed)
    assert _job(knowledge, model="llama-3.1-8b", kind="pretrain", precision="bf16").stack == "fsdp"
    assert _job(knowledge, model="qwen3-30b-a3b", kind="finetune").stack == "trl"


def test_a_typed_moe_pretraining_is_as_fast_as_the_vendor_recipe_it_can_express(knowledge) -> None:
    # Megatron-Bridge 25.09, Qwen3-30B-A3B on 8 B200 in FP8: EP8, micro-batch 1, global batch 512. Typed, the
    # tool used to pick the FSDP stack without expert parallelism, 0.71x its own answer for that recipe.
    typed = predict(
        knowledge, Workload(model="qwen3-30b-a3b", kind="pretrain", precision="fp8", seq_len=4096), "b200", 8
    )
    recipe = RunConfig(ep=8, zero=0, global_batch=512, recompute="none", stack="megatron")
    stated = predict(
        knowledge,
        Workload(
            model="qwen3-30b-a3b", kind="pretrain", precision="fp8", seq_len=4096, batch_size=1, config=recipe
        ),
        "b200",
        8,
    )
    assert typed.layout.ep > 1
    assert typed.throughput is not None and stated.throughput is not None
    assert typed.throughput.value >= 0.9 * stated.throughput.value


@pytest.mark.parametrize(
    "stack,config,field",
    [
        ("hf", {"pp": 2}, "pp"),
        ("trl", {"pp": 2}, "pp"),
        ("axolotl", {"pp": 4}, "pp"),
        ("llama-factory", {"tp": 2}, "tp"),
        ("torchtune", {"pp": 2}, "pp"),
        ("unsloth", {"tp": 2}, "tp"),
        ("torchtune", {"zero": 1}, "zero"),
    ],
)
def test_a_stack_is_never_paired_with_a_layout_it_cannot_run(
    knowledge, stack: str, config: dict, field: str
) -> None:
    job = _job(knowledge, model="llama-3.1-8b", kind="finetune", config=RunConfig(stack=stack, **config))
    with pytest.raises(InputError) as err:
        check_config(job, 8)
    assert err.value.field == field and stack in str(err.value)


def test_stated_layouts_a_stack_runs_are_accepted(knowledge) -> None:
    for stack, config in (("megatron", {"pp": 2}), ("hf", {"tp": 2}), ("torchtitan", {"cp": 2})):
        check_config(
            _job(knowledge, model="llama-3.1-8b", kind="finetune", config=RunConfig(stack=stack, **config)), 8
        )


@pytest.mark.parametrize("stack", ["hf", "trl", "axolotl", "llama-factory", "torchtune", "unsloth"])
def test_the_search_chooses_no_model_parallelism_a_stack_does_not_search(knowledge, stack: str) -> None:
    out = predict(
        knowledge,
        Workload(model="llama-3.1-70b", kind="lora", config=RunConfig(stack=stack)),
        "h100-sxm",
        16,
    )
    layouts = [out.layout] + [a.layout for a in out.alternatives]
    assert all(lay.tp == lay.pp == lay.cp == 1 for lay in layouts), out.parallelism


@pytest.mark.parametrize("stack,recompute", [("torchtune", "full"), ("trl", "full"), ("axolotl", "full")])
def test_recomputation_defaults_to_what_the_stacks_recipes_use(knowledge, stack: str, recompute: str) -> None:
    out = predict(
        knowledge,
        Workload(model="llama-3.1-8b", kind="finetune", config=RunConfig(stack=stack)),
        "h100-sxm",
        8,
    )
    assert out.layout.recompute == recompute


def test_a_typed_fp8_fine_tune_defaults_to_a_stack_with_fp8_kernels(knowledge) -> None:
    # FP8 GEMMs need FP8 kernels (Transformer Engine's, in Megatron-Core/NeMo); the fine-tuning toolkits'
    # default stack (TRL) has none in knowledge/training_stacks.toml. Typed, an FP8 LoRA used to get TRL,
    # full recomputation and ZeRO-3: 0.6-0.7x the same tool's answer for the Megatron recipe it can express.
    for kind in ("lora", "finetune"):
        job = _job(knowledge, model="llama-3.1-70b", kind=kind, precision="fp8")
        assert job.stack == "megatron" and any("Transformer Engine" in a.text for a in job.assumed)
    assert _job(knowledge, model="llama-3.1-70b", kind="lora", precision="bf16").stack == "trl"
    typed = predict(
        knowledge, Workload(model="llama-3.1-70b", kind="lora", precision="fp8", seq_len=8192), "h100-sxm", 8
    )
    recipe = RunConfig(tp=4, zero=1, global_batch=8, recompute="none", stack="megatron")
    stated = predict(
        knowledge,
        Workload(
            model="llama-3.1-70b", kind="lora", precision="fp8", seq_len=8192, batch_size=1, config=recipe
        ),
        "h100-sxm",
        8,
    )
    assert typed.throughput is not None and stated.throughput is not None
    assert typed.throughput.value >= 0.9 * stated.throughput.value


def test_every_stack_of_the_catalogue_is_accepted_as_a_stack(capsys) -> None:
    # knowledge/training_stacks.toml lists the stacks of the measured runs too (`pytorch`, `nanotron`, ...):
    # a question naming one is answered as the stack its runs_as names, never refused as an unknown name.
    from advisor.cli.main import main
    from advisor.question.vocab import STACK_ALIASES

    stacks = shipped_stacks()
    assert {k: s.runs_as for k, s in stacks.items() if s.data_only} == STACK_ALIASES
    for name, stack in stacks.items():
        argv = ["predict", "--model", "llama-3.1-8b", "--workload", "pretrain", "--gpu", "h100-sxm"]
        assert main([*argv, "--count", "8", "--stack", name, "--format", "json"]) == 0, name
        answered = json.loads(capsys.readouterr().out)["configuration"]["stack"]["value"]
        assert answered == (stack.runs_as or name), name
    assert main(["predict", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--stack", "pytorc"]) == 2
    assert "one of axolotl" in capsys.readouterr().err


def test_a_data_only_stack_names_a_stack_a_question_can_name() -> None:
    from advisor.catalog.stacks import parse_stacks
    from advisor.question.errors import KnowledgeError

    table = dict(label="x", search=[], stated=[], zero=[0], zero_stated=[], recompute="search")
    table |= dict(flash_attention="", compiled="", te_fp8="", megatron_runtime="", sources=[], note="")
    ok = {"fsdp": table, "old": table | {"data_only": True, "runs_as": "fsdp"}}
    assert parse_stacks({"stacks": ok})["old"].runs_as == "fsdp"
    for bad in ({"data_only": True}, {"data_only": True, "runs_as": "old"}, {"runs_as": "fsdp"}):
        with pytest.raises(KnowledgeError, match="runs_as"):
            parse_stacks({"stacks": ok | {"other": table | bad}})


def test_a_measured_runs_stack_is_answered_as_another_and_every_answer_says_so(
    knowledge, capsys, tmp_path
) -> None:
    # `--stack pytorch` is answered as fsdp: the plan's configuration (table, JSON, the UI's results, the TOML
    # export) says what was given and what it was answered as, not a bare `stack fsdp (given)`.
    import dataclasses
    import tomllib

    from advisor.cli.main import main
    from advisor.job.door import question
    from advisor.question.fields import FIELDS
    from tui.form import check

    argv = [
        "predict",
        "--model",
        "llama-3.1-8b",
        "--workload",
        "pretrain",
        "--gpu",
        "h100-sxm",
        "--count",
        "8",
    ]
    assert main([*argv, "--stack", "pytorch", "--format", "json"]) == 0
    stack = json.loads(capsys.readouterr().out)["configuration"]["stack"]
    assert stack["value"] == "fsdp" and stack["source"] == "given"
    assert stack["note"] == (
        "stack pytorch is answered as fsdp: its runs' traits no FlashAttention and compiled or fused "
        "kernels, fsdp's FlashAttention and eager kernels"
    )
    assert main([*argv, "--stack", "nanotron"]) == 0
    assert "stack megatron (given; stack nanotron is answered as megatron: " in capsys.readouterr().out
    assert main([*argv, "--stack", "fsdp", "--format", "json"]) == 0  # a stack a question names: no note
    assert json.loads(capsys.readouterr().out)["configuration"]["stack"]["note"] is None
    # The door keeps the name from any door (a --from table, the wizard), and drops it once the stack changes.
    work = question(Workload, {"model": "llama-3.1-8b", "config": {"stack": "PyTorch"}})
    assert work.config.stack == "fsdp" and type(work.config.stack) is str
    assert work.config.stack_named == "pytorch" and work.config.given() == {"stack": "fsdp"}
    assert dataclasses.replace(work.config, recompute="full").stack_named == "pytorch"
    assert dataclasses.replace(work.config, stack="megatron").stack_named is None
    assert FIELDS["stack"].parse(FIELDS["stack"].parse("litgpt")).given == "litgpt"  # read twice, kept
    form = check(
        {"kind": "pretrain", "model": "llama-3.1-8b", "stack": "in-house", "tokens": "1e9"}, knowledge
    )
    assert form.workload is not None and form.workload.config.stack_named == "in-house"
    # The export keeps the name given, so that a re-run says it again.
    plan = tmp_path / "plan.toml"
    rec = [
        "recommend",
        "--model",
        "llama-3.1-8b",
        "--workload",
        "pretrain",
        "--tokens",
        "1e9",
        "--max-gpus",
        "8",
    ]
    assert main([*rec, "--stack", "pytorch", "--format", "toml", "-o", str(plan)]) == 0
    exported = tomllib.loads(plan.read_text(encoding="utf-8"))
    assert exported["inputs"]["workload"]["config"]["stack"] == "pytorch"
    assert exported["chosen"]["configuration"]["stack"]["note"].startswith(
        "stack pytorch is answered as fsdp"
    )
    capsys.readouterr()
    assert main(["recommend", "--from", str(plan)]) == 0
    assert "stack pytorch is answered as fsdp" in capsys.readouterr().out
