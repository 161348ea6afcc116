"""Issue 29: the pipeline bubble is stated as a share of the step, the step model's own bubble / step time."""

from __future__ import annotations

import pytest

from advisor.answer.recommend import run_search
from advisor.job.inputs import Constraints, RunConfig, Workload
from advisor.job.layout import Layout
from advisor.search.candidates import bubble_pct


def _layout(pp: int, m: int, v: int = 1) -> Layout:
    return Layout(8 * pp, pp, 8, "bf16", 1, pp, 8, "none", "none", 1, m, virtual=v)


@pytest.mark.parametrize("pp, m, v, share", [(8, 8, 1, 47), (8, 1, 1, 88), (4, 16, 1, 16), (8, 8, 2, 30)])
def test_closed_form_is_a_share_of_the_step(pp: int, m: int, v: int, share: int) -> None:
    # The case: 8 stages, 8 micro-batches: f = 7/8 of the ideal compute, 47% of the step (not 88%).
    assert bubble_pct(_layout(pp, m, v)) == share


def test_no_pipeline_no_bubble() -> None:
    assert bubble_pct(_layout(1, 8)) == 0


def test_pipeline_plans_state_the_step_models_bubble(knowledge) -> None:
    """Every searched pipeline plan's advice share is its own step's bubble time / step time, in 0-100%."""
    work = Workload(
        model="llama-3.1-8b", kind="pretrain", tokens=1e9, config=RunConfig(pp=8, stack="megatron")
    )
    search = run_search(knowledge, work, Constraints(gpus=["h100-sxm"], max_gpus=64))
    piped = [s.cand for s in search.feasible if s.cand.layout.pp > 1]
    assert piped
    for cand in piped:
        step = cand.step
        assert step is not None and cand.facts
        share = cand.facts["plan.bubble_pct"]
        assert 0 <= share < 100
        assert share == round(100 * step.bubble_s / step.total_s)
        advice = [f.message for f in cand.firings if f.rule_id.startswith("advise-pipeline")]
        assert advice and f"idles about {share}% of each step" in advice[0]
