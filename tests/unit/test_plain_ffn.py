"""Unit tests of a custom shape's plain (two-matrix, non-gated) FFN: --ffn-type plain, the model_shape key
ffn_type=plain, and the default (gated) left as it was."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from advisor.catalog.hf_config import spec_from_shape
from advisor.job.shape import arch_of
from advisor.question.errors import InputError
from advisor.question.fields import FIELDS

GPT2_VOCAB = 50257

# GPT-3's Table 2.1 (Brown et al. 2020, arXiv:2005.14165): n_layers, d_model, n_heads; d_ff = 4 x d_model,
# a plain (two-matrix, GeLU) MLP; the GPT-2 vocabulary. 13B's d_model is printed as 5140 beside 40 heads of
# d_head 128, which is 5120: 5120 is used here (5140 does not split into 40 heads).
GPT3 = [
    ("GPT-3 2.7B", 2.7e9, 32, 2560, 32),
    ("GPT-3 6.7B", 6.7e9, 32, 4096, 32),
    ("GPT-3 13B", 13.0e9, 40, 5120, 40),
    ("GPT-3 175B", 175.0e9, 96, 12288, 96),
]


@pytest.mark.parametrize("name, published, layers, hidden, heads", GPT3, ids=[g[0] for g in GPT3])
def test_gpt3_shapes_count_their_published_size_only_when_plain(
    name: str, published: float, layers: int, hidden: int, heads: int
) -> None:
    dims = (layers, hidden, heads, heads, 4 * hidden, GPT2_VOCAB)
    plain = spec_from_shape(*dims, gated=False)
    gated = spec_from_shape(*dims)
    # The shape counter is Llama-style (untied lm head, no biases, no learned positions): within 4% of the
    # published size (the untied head adds V x h: 2.7% at 2.7B, 0.7% at 175B).
    assert plain.params == pytest.approx(published, rel=0.04), name
    assert gated.params > 1.25 * published, name  # a third FFN matrix: ~16 h^2 a layer instead of ~12 h^2
    assert not plain.gated_ffn and gated.gated_ffn
    assert arch_of(plain).gated is False and arch_of(gated).gated is True
    assert "plain" in plain.name and "plain" not in gated.name


def test_the_field_reads_both_types_and_refuses_others_naming_them() -> None:
    f = FIELDS["ffn_type"]
    assert f.parse("plain") == "plain" and f.parse(" Gated ") == "gated" and f.parse("") is None
    with pytest.raises(InputError) as err:
        f.parse("swish")
    assert "one of gated, plain" in str(err.value)


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "advisor.cli.main", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])},
        timeout=120,
    )


SHAPE = ("--layers", "32", "--hidden", "4096", "--heads", "32", "--kv-heads", "32", "--ffn", "16384")
PREDICT = (
    "predict",
    *SHAPE,
    "--vocab",
    "50257",
    "--workload",
    "pretrain",
    "--gpu",
    "h100-sxm",
    "--count",
    "8",
)


def test_cli_plain_changes_the_count_and_the_default_is_unchanged() -> None:
    default, gated, plain = (
        run(*PREDICT, *extra) for extra in ((), ("--ffn-type", "gated"), ("--ffn-type", "plain"))
    )
    assert default.returncode == gated.returncode == plain.returncode == 0, default.stderr + plain.stderr
    assert default.stdout == gated.stdout  # stating the default changes nothing
    assert "(32 KV), FFN 16384, vocab 50257, 9B parameters" in default.stdout
    assert "(32 KV), plain FFN 16384, vocab 50257, 6.85B parameters" in plain.stdout


def test_cli_bad_value_is_one_line_naming_the_accepted() -> None:
    bad = run(*PREDICT, "--ffn-type", "swiglu2")
    assert bad.returncode == 2
    assert bad.stderr.strip().count("\n") == 0
    assert "--ffn-type" in bad.stderr and "one of gated, plain" in bad.stderr
    text = " ".join(run("predict", "--help").stdout.split())
    assert "--ffn-type TYPE gated (SwiGLU, Llama) or plain (GPT-2/3, OPT, BLOOM) (default gated)" in text


def test_toml_export_and_from_round_trip_keep_the_plain_ffn(tmp_path: Path) -> None:
    args = ("recommend", *SHAPE, "--vocab", "50257", "--ffn-type", "plain", "--tokens", "10B")
    args += ("--gpu", "h100-sxm", "--top", "1", "--format", "toml")
    first = run(*args)
    assert first.returncode == 0, first.stderr
    data = tomllib.loads(first.stdout)
    spec = data["inputs"]["workload"]["spec"]
    assert spec["gated_ffn"] is False and spec["params"] == pytest.approx(6.85e9, rel=0.01)
    path = tmp_path / "plain.toml"
    path.write_text(first.stdout)
    again = run("recommend", "--from", str(path), "--format", "toml")
    assert again.returncode == 0, again.stderr
    redo = tomllib.loads(again.stdout)
    assert redo["inputs"]["workload"]["spec"] == spec
    assert redo["chosen"] == data["chosen"]
