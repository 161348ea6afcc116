"""bench_typed's development-set split reads a plan's choices from predict's JSON: the stack, the
recomputation (an open one marked so), the model-parallel layout and the micro-batch, and names the ones the
typed answer made otherwise than the stated run."""

from __future__ import annotations

from tests.unit.bench_scripts import bench_script


def _bench():
    return bench_script("bench_typed")


def _answer(stack: str, recompute: str, note: str | None, tp: int, mb: int) -> dict:
    conf = {
        "stack": {"value": stack},
        "recompute": {"value": recompute, "note": note},
        "tp": {"value": tp},
        "pp": {"value": 1},
        "cp": {"value": 1},
        "ep": {"value": 1},
        "micro_batch": {"value": mb},
    }
    return {"configuration": conf}


def test_a_plan_reads_its_choices_and_an_open_recomputation() -> None:
    bench = _bench()
    typed = bench.plan_of(_answer("fsdp", "none", "open: full also priced", 1, 2))
    stated = bench.plan_of(_answer("megatron", "full", None, 4, 2))
    assert typed == {"stack": "fsdp", "recompute": "none/open", "layout": "dp", "micro_batch": "2"}
    assert stated["layout"] == "tp4" and stated["recompute"] == "full"
    assert bench.choices_differ(stated, typed) == ["stack", "recompute", "layout"]
    # The open policy is compared as the plan's own (none): a run without recomputation does not differ.
    assert bench.choices_differ(bench.plan_of(_answer("fsdp", "none", None, 1, 2)), typed) == []
