"""Tests of --config and the quick shape flags wired into predict/recommend, and of the memory check."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.cli.main import main
from advisor.job.inputs import Workload
from advisor.job.resolve import resolve_job
from advisor.job.shape import dense_arch_for

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "hf_configs"
SHAPE = [
    "--layers",
    "32",
    "--hidden",
    "4096",
    "--heads",
    "32",
    "--kv-heads",
    "8",
    "--ffn",
    "14336",
    "--vocab",
    "128256",
]


def _predict_json(capsys, *flags: str) -> dict:
    assert main(["predict", *flags, "--gpu", "h100-sxm", "--count", "8", "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_config_gives_the_catalogue_parameter_count(knowledge, capsys) -> None:
    out = _predict_json(capsys, "--config", str(CONFIGS / "llama-3.1-8b.json"))
    assert any("8.03B parameters counted from the shape" in a["text"] for a in out["assumed"])
    from advisor.catalog.hf_config import read_hf_config

    spec = read_hf_config(CONFIGS / "llama-3.1-8b.json")
    assert spec.params == pytest.approx(knowledge.model("llama-3.1-8b").params, rel=0.01)
    assert spec.source.endswith("llama-3.1-8b.json")


def test_quick_shape_matches_the_config(capsys) -> None:
    out = _predict_json(capsys, *SHAPE)
    assert any("model shape from shape" in a["text"] for a in out["assumed"])


QWEN3_MOE = [
    "--layers",
    "48",
    "--hidden",
    "2048",
    "--heads",
    "32",
    "--kv-heads",
    "4",
    "--ffn",
    "768",
    "--vocab",
    "151936",
    "--experts",
    "128",
    "--experts-per-token",
    "8",
]


def test_an_explicit_head_dim_widens_the_attention_as_the_catalogue_counts_it(knowledge, capsys) -> None:
    # Qwen3-30B-A3B: 32 heads of 128 on a 2,048 hidden size, so its q projection is 4,096 wide (models.toml).
    wide = _predict_json(capsys, *QWEN3_MOE, "--head-dim", "128", "--workload", "pretrain")
    narrow = _predict_json(capsys, *QWEN3_MOE, "--workload", "pretrain")
    counted = [a["text"] for a in wide["assumed"] if "parameters counted from the shape" in a["text"]]
    assert counted and "32 heads of 128 (4 KV)" in counted[0] and "30.5B parameters" in counted[0], counted
    assert any("30.1B parameters" in a["text"] for a in narrow["assumed"])  # q 2,048 wide: 0.4B fewer
    # Qwen3-32B (the brief's case): 64 heads of 128 on a 5,120 hidden size, attention projections 8,192 wide;
    # Qwen's model card states 32.8B parameters.
    qwen3_32b = ["--layers", "64", "--hidden", "5120", "--heads", "64", "--kv-heads", "8", "--ffn", "25600"]
    out = _predict_json(capsys, *qwen3_32b, "--vocab", "151936", "--head-dim", "128", "--workload", "lora")
    assert any("64 heads of 128 (8 KV)" in a["text"] and "32.8B" in a["text"] for a in out["assumed"])


def test_a_stated_head_dim_need_not_split_the_width(capsys) -> None:
    # Languini Kitchen's GPT 'XL': 24 heads of 128 on a 2,048 width (24 does not divide 2,048); the head size
    # is stated, so the shape is sound. Without it the width must split into the heads.
    xl = ["--layers", "24", "--hidden", "2048", "--heads", "24", "--kv-heads", "24", "--ffn", "8192"]
    out = _predict_json(capsys, *xl, "--vocab", "16384", "--head-dim", "128", "--workload", "pretrain")
    assert any("24 heads of 128" in a["text"] for a in out["assumed"])
    assert main(["predict", *xl, "--vocab", "16384", "--gpu", "h100-sxm"]) == 2
    assert "heads" in capsys.readouterr().err


@pytest.mark.parametrize(
    "flags",
    [
        [*SHAPE, "--head-dim", "0"],
        ["--model", "llama-3.1-8b", "--config", str(CONFIGS / "llama-3.1-8b.json")],
        ["--layers", "32", "--hidden", "4096"],
        ["--config", "/no/such/config.json"],
        [*SHAPE[:-2], "--vocab", "many"],
    ],
)
def test_bad_model_flags_are_one_line_exit_2(flags, capsys) -> None:
    assert main(["predict", *flags, "--gpu", "h100-sxm"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "error" in err


def test_export_carries_the_shape_and_from_reproduces_it(tmp_path, capsys) -> None:
    spec_file = tmp_path / "run.toml"
    config = tmp_path / "config.json"
    config.write_text((CONFIGS / "llama-3.2-1b.json").read_text())
    assert main(
        [
            "recommend",
            "--config",
            str(config),
            "--workload",
            "lora",
            "--gpu",
            "h100-sxm",
            "--max-gpus",
            "8",
            "--format",
            "toml",
            "-o",
            str(spec_file),
        ]
    ) in (0, 1)
    config.unlink()  # --from must not need the original file
    capsys.readouterr()
    assert main(["recommend", "--from", str(spec_file), "--format", "json"]) in (0, 1)
    report = json.loads(capsys.readouterr().out)
    assert "config.json" in json.dumps(report["job"]) or report["job"]["model_id"]


def test_generic_params_take_llama3_proportions(knowledge) -> None:
    arch = dense_arch_for(8e9)
    spec = knowledge.model("llama-3.1-8b")
    assert (arch.layers, arch.hidden, arch.kv_heads, arch.ffn_hidden, arch.vocab) == (
        spec.layers,
        spec.hidden,
        spec.kv_heads,
        spec.ffn_hidden,
        spec.vocab,
    )
    job = resolve_job(knowledge, Workload(params=70e9, kind="pretrain", tokens=1e9))
    assert (
        job.arch is not None
        and job.arch.kv_heads == 8
        and any("Llama 3 proportions" in (a.note or "") for a in job.assumed)
    )


def test_memory_check_reports_every_source() -> None:
    from advisor.catalog.loader import load_knowledge
    from advisor.learned.memory.validation import check_all, memory_validation_lines, read_rows

    checks = check_all(load_knowledge())
    assert len(checks) == len(read_rows()) >= 200
    lines = memory_validation_lines()
    assert any(line.strip().startswith("torchtitan-h100") for line in lines)
    assert any("fit verdicts" in line for line in lines)
    measured = [c for c in checks if c.gb_error is not None]
    assert measured and all(c.band[0] <= 0 <= c.band[1] and c.spread[0] <= c.band[0] for c in checks)
