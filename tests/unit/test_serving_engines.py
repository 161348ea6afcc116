"""Engines as data: each engine's layouts and launch template (knowledge/serving_engines.toml); the search
offers only what the engine can run, and every plan kind it offers launches with the plan's layout."""

from __future__ import annotations

import re

import pytest

from advisor.answer.predict import predict
from advisor.answer.recommend import recommend
from advisor.job.inputs import Constraints, RunConfig, Workload
from advisor.learned.serving.engines import engines, runs
from advisor.ops.launch import serve_command
from advisor.ops.plan_facts import PlanFacts
from advisor.question.errors import InputError
from advisor.question.vocab import ENGINES

# The flags that carry tensor and pipeline parallel sizes, per engine (as the engines' CLIs name them).
TP_FLAG = {
    "vllm": "--tensor-parallel-size",
    "sglang": "--tp-size",
    "trtllm": "--tp_size",
    "lmdeploy": "--tp",
    "tgi": "--num-shard",
}
PP_FLAG = {"vllm": "--pipeline-parallel-size", "sglang": "--pp-size", "trtllm": "--pp_size"}


def _flag(cmd: str, flag: str) -> int | None:
    m = re.search(rf"(?:^| ){re.escape(flag)} (\d+)", cmd)
    return int(m.group(1)) if m else None


def test_every_engine_states_its_layouts_and_launch_with_sources() -> None:
    for eid in ENGINES:
        eng = engines()[eid]
        assert {"tp", "pp", "ep", "disaggregation", "source"} <= set(eng.supports), eid
        assert eng.supports["source"] and eng.launch["source"], eid
        assert "{model}" in eng.launch["command"] and "{tp}" in eng.launch["command"], eid
        assert ("{pp}" in eng.launch["command"]) == bool(eng.supports["pp"]), eid


def test_tgi_has_no_pipeline_and_lmdeploy_powers_of_two() -> None:
    tgi, lmd = engines()["tgi"], engines()["lmdeploy"]
    assert not runs(tgi, 8, 2) and runs(tgi, 8, 1)
    assert not runs(lmd, 6, 1) and runs(lmd, 4, 1)


def _facts(eid: str, tp: int, pp: int, replicas: int = 1) -> PlanFacts:
    return PlanFacts(
        gpu="h100-sxm",
        count=tp * pp * replicas,
        nodes=max(1, tp * pp * replicas // 8),
        precision="fp8",
        tp=tp,
        pp=pp,
        dp=replicas,
        sharding="none",
        recompute="none",
        micro_batch=1,
        grad_accum=1,
        hours_p50=730.0,
        replicas=replicas,
        gpus_per_replica=tp * pp,
        engine=eid,
    )


@pytest.mark.parametrize("eid", ENGINES)
def test_every_layout_the_search_offers_launches_with_it(knowledge, eid: str) -> None:
    """Every replica shape the serving search tries for 16 H100s (tensor parallel in a server, pipeline
    stages across servers) is one the engine runs, and its command carries the shape's tp (and pp where
    the engine has stages)."""
    from advisor.search.serving import shapes

    w = Workload(model="llama-3.1-405b", kind="inference", config=RunConfig(engine=eid))
    job = report_job(knowledge, w)
    offered = shapes(job, 8, 16)
    assert offered, eid
    eng = engines()[eid]
    assert any(pp > 1 for _, pp in offered) == bool(eng.supports["pp"]), (eid, offered)
    for tp, pp in offered:
        assert runs(eng, tp, pp), (eid, tp, pp)
        cmd = serve_command(job, _facts(eid, tp, pp, 16 // (tp * pp)))
        assert _flag(cmd, TP_FLAG[eid]) == tp, cmd
        if eid in PP_FLAG:
            assert _flag(cmd, PP_FLAG[eid]) == pp, cmd
        else:
            assert "pipeline" not in cmd and "pp" not in cmd, cmd


@pytest.mark.parametrize("eid", ENGINES)
def test_a_recommended_plan_launches_with_its_layout(knowledge, eid: str) -> None:
    """End to end: recommend's top plan and its launch file's command carry the same layout."""
    w = Workload(model="llama-3.1-70b", kind="inference", requests_per_s=5, config=RunConfig(engine=eid))
    report = recommend(knowledge, w, Constraints(top=1, gpus=("h100-sxm",)))
    plan, serve = report.plans[0], report.launch.serve
    assert _flag(serve, TP_FLAG[eid]) == plan.layout.tp, serve
    if eid in PP_FLAG:
        assert _flag(serve, PP_FLAG[eid]) == plan.layout.pp, serve
    assert engines()[eid].supports["pp"] or plan.layout.pp == 1


def report_job(knowledge, w: Workload):
    from advisor.job.resolve import resolve_job

    return resolve_job(knowledge, w, need_data=False)


def test_a_stated_pipeline_on_tgi_is_refused_naming_the_engine(knowledge) -> None:
    w = Workload(model="llama-3.1-70b", kind="inference", config=RunConfig(engine="tgi", pp=2))
    with pytest.raises(InputError, match=r"pipeline parallelism.*Text Generation Inference"):
        predict(knowledge, w, "h100-sxm", 16)


def test_engine_flags_a_user_sets_are_in_the_launch(knowledge) -> None:
    cfg = RunConfig(engine="vllm", max_num_seqs=64, max_batched_tokens=4096, gpu_memory_utilization=0.85)
    w = Workload(model="llama-3.1-8b", kind="inference", requests_per_s=2, config=cfg)
    report = recommend(knowledge, w, Constraints(top=1, gpus=("h100-sxm",)))
    serve = report.launch.serve
    assert "--max-num-seqs 64" in serve and "--max-num-batched-tokens 4096" in serve
    assert "--gpu-memory-utilization 0.85" in serve


def test_engines_without_a_prefill_decode_split_get_no_disaggregated_plan(knowledge) -> None:
    for eid in ("tgi", "lmdeploy"):
        w = Workload(
            model="llama-3.1-8b",
            kind="inference",
            requests_per_s=200,
            ttft_ms=300,
            tpot_ms=20,
            config=RunConfig(engine=eid),
        )
        report = recommend(knowledge, w, Constraints(top=10, gpus=("h100-sxm",)))
        assert all(p.serving is None or p.serving.prefill_replicas == 0 for p in report.plans), eid
