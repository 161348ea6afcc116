"""Development rows state the kernels and shapes their sources state: a fused linear cross-entropy named in
the software column is held as fused_loss, and a GPT-2 custom shape carries its plain (two-matrix) FFN."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# heldout9 is sealed: never read here.
DEV_SETS = tuple(ROOT / "benchmarks" / f"heldout{n}_training_runs.csv" for n in ("", 2, 3, 4, 5, 6, 7, 8))


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("path", DEV_SETS, ids=lambda p: p.name)
def test_a_stated_fused_linear_cross_entropy_is_held_as_fused_loss(path: Path) -> None:
    """A row whose software names Liger's fused linear cross-entropy is run with --fused-loss liger: without
    it the tool counts the full fp32 logits the kernel never holds (heldout8's Shisa rows were refused)."""
    for row in _rows(path):
        software = row.get("software", "").lower()
        if "liger" in software and "fused linear cross-entropy" in software:
            assert row.get("fused_loss") == "liger", f"{row['id']}: its software states Liger's FLCE"


@pytest.mark.parametrize("path", DEV_SETS, ids=lambda p: p.name)
def test_a_gpt2_shape_states_its_plain_ffn(path: Path) -> None:
    """GPT-2's MLP is two matrices, 4h wide with GeLU: a custom shape of a GPT-2 model says ffn_type=plain,
    or the tool counts a third FFN matrix (heldout8's ADLR 1.2B read as 1.67B and refused on one V100)."""
    for row in _rows(path):
        shape = row.get("model_shape", "")
        if shape and "gpt-2" in row.get("source_model", "").lower():
            assert "ffn_type=plain" in shape, f"{row['id']}: a GPT-2 shape without ffn_type=plain"


def test_the_shisa_rows_answer_with_the_kernel_and_are_refused_without_it() -> None:
    """The stated configuration of a Shisa 1B run (64 x 8,192 tokens per micro-batch on one MI300X) fits with
    the fused loss and not without it: the refusal came from the logits (128k vocabulary x 524k tokens)."""
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_heldout

    row = next(r for r in _rows(DEV_SETS[-1]) if r["id"] == "shisa-llama32-1b-1xmi300x-bjsf8tlt")
    args = bench_heldout.training_args({k: v or "" for k, v in row.items()}, "stated")
    assert "--fused-loss" in args
    fits = bench_heldout.cli.predict(args)
    assert fits.data is not None, fits.refusal
    i = args.index("--fused-loss")
    refused = bench_heldout.cli.predict(args[:i] + args[i + 2 :])
    assert refused.data is None and "memory" in refused.refusal
