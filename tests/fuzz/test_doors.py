"""Each door refuses hostile input in one line (exit 2) at once, and the prices store survives parallel and
damaged use: the cases an independent re-test found (issue 21), kept as tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fuzz_cases import ROOT, aside_files, problems, run_in_process, run_process, write_file

LLAMA = {
    "model_type": "llama",
    "num_hidden_layers": 32,
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "intermediate_size": 14336,
    "vocab_size": 128256,
}
DEEPSEEK = {
    "model_type": "deepseek_v3",
    "num_hidden_layers": 4,
    "hidden_size": 7168,
    "num_attention_heads": 128,
    "intermediate_size": 18432,
    "vocab_size": 129280,
    "kv_lora_rank": 512,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "q_lora_rank": 1536,
    "n_routed_experts": 256,
    "num_experts_per_tok": 8,
    "moe_intermediate_size": 2048,
    "n_shared_experts": 1,
    "first_k_dense_replace": 10,
}
QWEN_MOE = {
    **LLAMA,
    "model_type": "qwen2_moe",
    "num_experts": 60,
    "num_experts_per_tok": 4,
    "moe_intermediate_size": 1408,
    "shared_expert_intermediate_size": 5632,
}
CONFIGS: dict[str, str] = {
    "kv-heads-not-dividing": json.dumps({**LLAMA, "num_key_value_heads": 5}),
    "hidden-not-splitting": json.dumps({**LLAMA, "hidden_size": 4100}),
    "5000-digit-integer": json.dumps(LLAMA)[:-1] + ', "vocab_size": ' + "9" * 5000 + "}",
    "1e300-layers-int": json.dumps({**LLAMA, "num_hidden_layers": 10**300}),
    "1e300-layers-float": json.dumps({**LLAMA, "num_hidden_layers": 1e300}),
    "nan-hidden": json.dumps(LLAMA).replace('"hidden_size": 4096', '"hidden_size": NaN'),
    "infinity-vocab": json.dumps(LLAMA).replace('"vocab_size": 128256', '"vocab_size": Infinity'),
    "negative-ffn": json.dumps({**LLAMA, "intermediate_size": -14336}),
    "qwen-moe-1e10-layers": json.dumps({**QWEN_MOE, "num_hidden_layers": 10**10}),
    "top-k-over-experts": json.dumps(
        {**LLAMA, "model_type": "mixtral", "num_local_experts": 8, "num_experts_per_tok": 9}
    ),
    "dense-layers-past-depth": json.dumps(DEEPSEEK),
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_hostile_config_is_one_line(name: str, tmp_path: Path) -> None:
    path = write_file(tmp_path / f"{name}.json", CONFIGS[name])
    start = time.monotonic()
    outcome = run_in_process(["predict", "--gpu", "h100-sxm", "--config", str(path)])
    assert outcome.code == 2 and not problems(outcome), outcome
    assert time.monotonic() - start < 30, "a hostile config must be refused at once"


@pytest.mark.parametrize(
    "flags",
    [
        ["--layers", "1e300"],
        ["--layers", "1e10"],
        ["--layers", "inf"],
        ["--kv-heads", "5"],
        ["--heads", "0"],
        ["--hidden", "-4096"],
    ],
)
def test_hostile_shape_flags_are_one_line(flags: list[str]) -> None:
    shape = {
        "--layers": "32",
        "--hidden": "4096",
        "--heads": "32",
        "--kv-heads": "8",
        "--ffn": "14336",
        "--vocab": "128256",
    }
    shape[flags[0]] = flags[1]
    argv = ["predict", "--gpu", "h100-sxm", *[x for kv in shape.items() for x in kv]]
    outcome = run_in_process(argv)
    assert outcome.code == 2 and not problems(outcome), outcome


@pytest.mark.parametrize("edit", [("heads = 32", "heads = 0"), ("hidden = 4096", "hidden = -4096")])
def test_from_with_a_broken_model_shape_is_refused(edit: tuple[str, str], tmp_path: Path) -> None:
    spec = tmp_path / "plan.toml"
    shape = ["--layers", "32", "--hidden", "4096", "--heads", "32", "--kv-heads", "8", "--ffn", "14336"]
    first = run_in_process(
        [
            "recommend",
            *shape,
            "--vocab",
            "128256",
            "--workload",
            "lora",
            "--max-gpus",
            "8",
            "--format",
            "toml",
            "-o",
            str(spec),
        ]
    )
    assert first.code == 0, first
    text = spec.read_text()
    assert edit[0] in text
    write_file(spec, text.replace(edit[0], edit[1], 1))
    outcome = run_in_process(["recommend", "--from", str(spec)])
    assert outcome.code == 2 and not problems(outcome), outcome


@pytest.mark.parametrize("url", ["not a url", "file:///dev/zero#", "ftp://example.com/v8", "http://"])
def test_prices_update_takes_only_http_addresses(url: str, tmp_path: Path) -> None:
    outcome = run_process(
        ["prices", "update", "--url", url, "--cloud", "aws"],
        env={"GPU_ADVISOR_DATA_DIR": str(tmp_path)},
        timeout=30,
    )
    assert outcome.code == 2 and not problems(outcome), outcome
    assert not (tmp_path / "prices.json").exists()


def _catalogue(folder: Path, cloud: str, price: str = "55.04", count: str = "8.0") -> Path:
    src = (ROOT / "tests" / "data" / "skypilot-v8" / "aws" / "vms.csv").read_text().splitlines()
    header, row = src[0], src[1]
    row = row.replace(",55.04,", f",{price},").replace(",8.0,", f",{count},", 1)
    write_file(folder / cloud / "vms.csv", header + "\n" + row + "\n")
    return folder


def test_parallel_prices_updates_keep_every_cloud(tmp_path: Path) -> None:
    from advisor.catalog.prices_update import CLOUDS

    data = tmp_path / "data"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GPU_ADVISOR_DATA_DIR": str(data)}
    procs = []
    for i in range(15):
        cloud = CLOUDS[i % len(CLOUDS)]
        folder = _catalogue(tmp_path / f"cat-{i}", cloud)
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "advisor.cli.main",
                    "prices",
                    "update",
                    "--from",
                    str(folder),
                    "--cloud",
                    cloud,
                ],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
        )
    assert [p.wait(timeout=600) for p in procs] == [0] * 15
    stored = json.loads((data / "prices.json").read_text())
    assert {o["provider"] for o in stored["offers"]} == set(CLOUDS)


def test_a_price_that_rounds_to_zero_or_a_huge_count_is_an_invalid_row(tmp_path: Path) -> None:
    data = tmp_path / "data"
    for case, kwargs in (("tiny", {"price": "1e-9"}), ("huge", {"count": "1e300"})):
        folder = _catalogue(tmp_path / case, "aws", **kwargs)
        outcome = run_in_process_env(["prices", "update", "--from", str(folder), "--cloud", "aws"], data)
        # The row is refused, never stored as a $0 (or 1e300-GPU) offer: nothing usable, old prices kept.
        assert outcome.code == 2 and "no usable GPU offer" in outcome.stderr and not problems(outcome), (
            outcome
        )
        assert not (data / "prices.json").exists()


def run_in_process_env(argv: list[str], data: Path) -> object:
    old = os.environ.get("GPU_ADVISOR_DATA_DIR")
    os.environ["GPU_ADVISOR_DATA_DIR"] = str(data)
    try:
        return run_in_process(argv)
    finally:
        if old is None:
            os.environ.pop("GPU_ADVISOR_DATA_DIR", None)
        else:
            os.environ["GPU_ADVISOR_DATA_DIR"] = old


@pytest.mark.parametrize("damage", ["garbage", "wrong-shape", "dev-zero-link", "fifo", "folder"])
def test_a_damaged_prices_store_is_moved_aside_and_answers_at_once(damage: str, tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    store = data / "prices.json"
    if damage == "garbage":
        store.write_text("{not json")
    elif damage == "wrong-shape":
        store.write_text(
            json.dumps({"schema_version": 1, "fetched": "2026-01-01", "source": "x", "offers": 3})
        )
    elif damage == "dev-zero-link":
        store.symlink_to("/dev/zero")
    elif damage == "fifo":
        os.mkfifo(store)
    else:
        store.mkdir()
    start = time.monotonic()
    outcome = run_process(
        ["prices", "--gpu", "h100-sxm"], env={"GPU_ADVISOR_DATA_DIR": str(data)}, timeout=60
    )
    assert outcome.code == 0 and not problems(outcome), outcome
    assert time.monotonic() - start < 30
    assert "warning" in outcome.stderr and list(aside_files(data)), (outcome.stderr, list(data.iterdir()))


@pytest.mark.parametrize(
    "instance", ["p5\x1b[31m.48xlarge", '=HYPERLINK("http://x")', "@SUM(A1)", "p5.48xlarge\u202e"]
)
def test_hostile_catalogue_names_never_reach_the_store(instance: str, tmp_path: Path) -> None:
    folder = _catalogue(tmp_path / "cat", "aws")
    path = folder / "aws" / "vms.csv"
    write_file(path, path.read_text().replace("p5.48xlarge", instance, 1))
    data = tmp_path / "data"
    outcome = run_in_process_env(["prices", "update", "--from", str(folder), "--cloud", "aws"], data)
    assert outcome.code == 2 and "no usable GPU offer" in outcome.stderr and not problems(outcome), outcome
    assert "\x1b" not in outcome.stdout


def test_a_stored_model_with_an_absurd_baseline_is_moved_aside(tmp_path: Path) -> None:
    from advisor.catalog import load_knowledge

    shipped = json.loads(load_knowledge().root.joinpath("efficiency_model.json").read_text())
    shipped["baseline"] = 1e308
    data = tmp_path / "data"
    write_file(data / "calibration" / "efficiency_model.json", json.dumps(shipped))
    outcome = run_process(
        ["predict", "--model", "llama-2-7b", "--workload", "finetune", "--gpu", "h100-sxm", "--count", "8"],
        env={"GPU_ADVISOR_DATA_DIR": str(data)},
    )
    assert outcome.code == 0 and not problems(outcome), outcome
    assert "warning" in outcome.stderr and list(aside_files(data / "calibration"))


def test_json_output_never_holds_a_non_finite_number() -> None:
    from advisor.cli.output import json_text

    text = json_text({"a": float("inf"), "b": [float("nan"), 1.5], "c": (2, float("-inf"))})
    assert json.loads(text) == {"a": None, "b": [None, 1.5], "c": [2, None]}
