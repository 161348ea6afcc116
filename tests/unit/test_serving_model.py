"""The serving model: its data, a reproducible fit, a prediction against a measured row, queueing sanity."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.learned.serving.data import load_cases
from advisor.learned.serving.fit import config_of, fit, predicted
from advisor.learned.serving.model import ServingModel, load_model
from advisor.learned.serving.queueing import at_rate, capacity, largest_rate

ROOT = Path(__file__).resolve().parents[2]


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


def test_rows_are_valid_and_cited(cases):
    assert len(cases) > 300
    for c in cases:
        assert c.isl > 0 and c.osl > 0 and c.tp >= 1
        assert "@" in c.ref and len(c.ref.split("@")[1].split()[0]) == 40
        assert (c.output_tok_s or 0) > 0 or (c.ttft_ms or 0) > 0


def test_fit_on_a_small_fold_is_reproducible(cases):
    fold = [c for c in cases if c.model == "llama-3.1-8b" and c.kind == "offline"]
    a, b = fit(fold), fit(fold)
    assert a.prefill == b.prefill and a.decode == b.decode
    assert ServingModel.from_json(a.to_json()).decode == a.decode


def test_a_measured_row_lies_in_the_shipped_interval(cases):
    model = load_model()
    assert model is not None
    row = next(
        c
        for c in cases
        if c.kind == "offline"
        and c.gpu == "h100-sxm"
        and c.model == "llama-3.1-8b"
        and c.isl == 128
        and c.osl == 2048
        and "258c7540" in c.ref
    )
    pred, measured = predicted(model, row)
    lo, hi = model.band("throughput")
    assert pred * lo <= measured <= pred * hi


def test_ttft_grows_with_load_and_diverges_at_capacity(cases):
    model = load_model()
    c = next(c for c in cases if c.kind == "online" and c.model == "llama-3.1-8b")
    cfg = config_of(c)
    cap = capacity(model, cfg, c.shape, c.hw)
    ttfts = [at_rate(model, cfg, c.shape, c.hw, cap * f).ttft_s for f in (0.1, 0.5, 0.9, 0.99)]
    assert ttfts == sorted(ttfts) and ttfts[-1] > 5 * ttfts[0]
    assert math.isinf(at_rate(model, cfg, c.shape, c.hw, cap * 1.01).ttft_s)
    best = largest_rate(model, cfg, c.shape, c.hw, ttfts[1], None)
    assert 0.4 * cap < best <= 0.5 * cap * 1.001


def test_prediction_modules_do_not_import_sklearn_or_scipy():
    code = (
        "import sys, advisor.learned.serving.model, advisor.learned.serving.queueing;"
        "print(any(m.split('.')[0] in ('sklearn', 'scipy') for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.stdout.strip() == "False", out.stderr
