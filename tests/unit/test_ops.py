"""Tests of TCO, buy versus rent, the operations plan and the launch artefacts (parsed back and checked)."""

from __future__ import annotations

import json
import tomllib

import pytest
import yaml

from advisor.answer.export import export_toml
from advisor.answer.recommend import recommend
from advisor.job.inputs import Constraints, Workload
from advisor.ops.tco import TcoInputs, tco
from advisor.question.errors import InputError


def test_tco_breakdown_adds_up_and_flags_shares(knowledge) -> None:
    out = tco(knowledge, TcoInputs(gpu="h100-sxm", count=8, years=3, utilization=0.6))
    # One operations category: the guide's staff share and its 15% maintenance rule are not both charged.
    assert {c.component for c in out.lines} == {"hardware", "network", "power", "operations", "space"}
    assert sum(c.usd for c in out.lines) == pytest.approx(out.total_usd, rel=1e-6)
    assert sum(c.share for c in out.lines) == pytest.approx(1.0, abs=1e-3)
    power = next(c for c in out.lines if c.component == "power")
    # 8 x (700 W + 575 W server share) x 60% x 8760 h x PUE 1.58 x $0.0806/kWh x 3 years
    assert power.usd == pytest.approx(8 * 1275 * 0.6 * 8760 / 1000 * 1.58 * 0.0806 * 3, rel=1e-6)
    assert power.flag.startswith("far outside")  # the guide's 25-35% does not hold at US industrial tariffs
    assert out.usd_per_gpu_hour == pytest.approx(out.total_usd / (8 * 8760 * 3 * 0.6), abs=1e-4)
    # The per-GPU-hour attribution has one part per line and the parts add up to the table's total.
    assert set(out.attribution_per_gpu_hour) == {c.component for c in out.lines}
    assert sum(out.attribution_per_gpu_hour.values()) == pytest.approx(out.usd_per_gpu_hour, abs=1e-3)


def test_operations_is_not_circular_and_staff_replaces_it(knowledge) -> None:
    base = tco(knowledge, TcoInputs(gpu="h100-sxm", count=64, years=3))
    ops = next(c for c in base.lines if c.component == "operations")
    hw = sum(c.usd for c in base.lines if c.component in ("hardware", "network"))
    assert ops.usd == pytest.approx(0.15 * hw, rel=1e-6)  # the guide's rule, not a fixed share of the total
    given = tco(knowledge, TcoInputs(gpu="h100-sxm", count=64, years=3, staff_usd_year=200_000))
    assert next(c for c in given.lines if c.component == "operations").usd == pytest.approx(600_000)


def test_staged_purchase_is_whole_servers_at_the_nearest_share(knowledge) -> None:
    out = tco(knowledge, TcoInputs(gpu="h100-sxm", count=64, years=3))
    first = out.staged[0]
    assert first.gpus == 24 and "25.6" in first.action  # 40% of 64 = 25.6 -> 3 servers of 8
    assert sum(s.gpus for s in out.staged) == 64
    gpu = knowledge.gpu("h100-sxm")
    assert first.usd > 24 * gpu.price.usd  # servers and fabric are part of each step's cost


def test_tco_help_states_the_pue_the_code_uses(knowledge) -> None:
    from advisor.catalog.tco import load_tco
    from advisor.cli.main import build_parser

    pue = load_tco(knowledge).power["pue"].value
    tco_parser = build_parser()._subparsers._group_actions[0].choices["tco"]  # type: ignore[union-attr]
    assert f"default {pue:g}" in tco_parser.format_help()


def test_buy_versus_rent_break_even(knowledge) -> None:
    low = tco(knowledge, TcoInputs(gpu="h100-sxm", count=8, utilization=0.3)).buy_rent
    high = tco(knowledge, TcoInputs(gpu="h100-sxm", count=8, utilization=1.0)).buy_rent
    assert low.breakeven_utilization == pytest.approx(high.breakeven_utilization, rel=0.2)
    u = low.breakeven_utilization
    assert u is not None and 0 < u < 1
    # At the break-even utilisation owning and renting cost the same per month.
    at = tco(knowledge, TcoInputs(gpu="h100-sxm", count=8, utilization=u)).buy_rent
    assert at.own_usd_per_month == pytest.approx(at.cloud_usd_per_month, rel=0.05)
    assert high.breakeven_months is not None and high.breakeven_months > 0


def test_payback_is_reproduced_by_its_own_lines(knowledge) -> None:
    """Payback = gross purchase / (cloud per month - running per month), running = power + operations + space:
    the resale at the end is not netted in (it made the running cost negative and the payback short)."""
    out = tco(knowledge, TcoInputs(gpu="h100-sxm", count=64, years=3))
    b, lines = out.buy_rent, {c.component: c.usd for c in out.lines}
    months = 3 * 12
    running = (lines["power"] + lines["operations"] + lines["space"]) / months
    assert b.running_usd_per_month == pytest.approx(running, rel=1e-4)
    assert b.running_usd_per_month > 0
    purchase = next(o for o in out.options if o.name == "purchase")
    assert b.capex_usd == pytest.approx(purchase.total_usd, rel=1e-6)
    assert b.cloud_usd_per_month is not None and b.breakeven_months is not None
    assert b.breakeven_months == pytest.approx(b.capex_usd / (b.cloud_usd_per_month - running), abs=0.06)
    assert f"{b.breakeven_months:.1f} months" in b.verdict


def test_options_and_staged_purchase(knowledge) -> None:
    out = tco(knowledge, TcoInputs(gpu="a100-80gb-sxm", count=64))
    names = [o.name for o in out.options]
    assert names == ["purchase", "lease", "joint development"]
    lease = out.options[1]
    assert lease.total_usd == pytest.approx(out.options[0].total_usd * 1.30, rel=1e-6)
    assert out.staged[0].gpus == 24 and sum(s.gpus for s in out.staged) == 64  # 40% = 25.6 -> 3 whole servers
    assert [s.month for s in out.staged] == [0, 3, 6, 9][: len(out.staged)]


def test_tco_refuses_gpus_without_a_price(knowledge) -> None:
    with pytest.raises(InputError, match="no sourced purchase price"):
        tco(knowledge, TcoInputs(gpu="l4", count=1))


@pytest.fixture(scope="module")
def onprem(knowledge):
    return recommend(
        knowledge,
        Workload(model="llama-2-70b", kind="finetune", tokens=2e8),
        Constraints(deployment="on-prem", top=3),
        onprem={"utilization": 0.6, "years": 3.0},
    )


def test_onprem_recommendation_carries_tco_ops_and_artefacts(knowledge, onprem) -> None:
    assert (
        onprem.plans
        and onprem.tco is not None
        and onprem.operations is not None
        and onprem.launch is not None
    )
    plan = onprem.plans[0]
    assert plan.price is None and onprem.tco.inputs.count == plan.count
    assert onprem.tco.inputs.utilization == 0.6
    data = tomllib.loads(export_toml(onprem, knowledge))
    assert data["tco"]["total_usd"] > 0 and data["operations"]["fault_tolerance"]
    assert data["launch"]["torchrun"].startswith("torchrun")


def test_operations_plan_items_have_reasons(onprem) -> None:
    ops = onprem.operations
    items = {i.name: i for _, i in ops.items()}
    for name in (
        "min GPUs",
        "max GPUs",
        "scale in",
        "training cap",
        "urgent",
        "regular",
        "batch inference",
        "development",
        "utilisation",
        "queue wait",
        "hardware failures",
        "idle",
        "restart policy",
        "checkpoint interval",
        "cluster policy",
    ):
        assert items[name].reason and items[name].source, name
    assert "3 failures" in items["restart policy"].setting
    assert "fleet plan" in items["cluster policy"].setting
    assert ops.power_effect is not None and ops.power_effect.energy_kwh_capped < ops.power_effect.energy_kwh


def _ops_items(knowledge, workload: Workload, **constraints) -> tuple[object, dict]:
    report = recommend(knowledge, workload, Constraints(**constraints))
    assert report.operations is not None
    return report.plans[0], {i.name: i for _, i in report.operations.items()}


def test_operations_say_only_what_is_true_of_a_short_one_gpu_training_job(knowledge) -> None:
    """Issue 20 item 6: no elastic reserve on a job that cannot resize, no night window for a short job, no
    checkpoint interval longer than the job, and the cluster's policy pointed to the fleet planner."""
    plan, items = _ops_items(knowledge, Workload(model="llama-3.1-8b", kind="lora", tokens=5e6), max_gpus=1)
    assert plan.count == 1 and plan.hours.p50 < 10
    assert items["max GPUs"].setting == "1" and "no elastic reserve" in items["max GPUs"].reason
    assert "reclaim window" not in items and "scale out" not in items and "off-peak" not in items
    assert items["checkpoint interval"].setting.startswith("at the end only")
    assert "fleet plan" in items["cluster policy"].setting


def test_operations_of_an_inference_plan_have_no_training_queues(knowledge) -> None:
    plan, items = _ops_items(knowledge, Workload(model="llama-3.1-8b", kind="inference", requests_per_s=20))
    assert not {"urgent", "regular", "batch inference", "development"} & set(items)
    assert items["serving"].setting.startswith("always on")
    per = plan.serving.gpus_per_replica
    assert int(items["max GPUs"].setting) >= plan.count + per  # a spare replica at least
    assert "22:00-06:00" in items["reclaim window"].setting and "85%" in items["scale out"].setting


@pytest.fixture(scope="module")
def long_spot_pretrain(knowledge) -> tuple[object, dict]:
    """A job whose checkpoint interval is set by the job, not "at the end only": 200B tokens on spot GPUs,
    hours long on hundreds of GPUs, so interruptions come often enough for Young's optimum to be shorter."""
    return _ops_items(knowledge, Workload(model="llama-3.1-8b", kind="pretrain", tokens=2e11), pricing="spot")


def test_checkpoint_interval_is_never_longer_than_the_job(long_spot_pretrain) -> None:
    plan, items = long_spot_pretrain
    setting = items["checkpoint interval"].setting
    assert setting.startswith("every "), setting  # the interval is computed, not the end-only fallback
    minutes = float(setting.split("~")[1].split(" min")[0].replace(",", ""))
    assert 0 < minutes <= plan.hours.p50 * 60, setting
    steps = int(setting.split()[1])
    assert abs(steps * plan.step_time_s.p50 / 60 - minutes) <= 1, setting  # steps and minutes say the same
    assert "spot preemptions" in items["checkpoint interval"].reason


def test_the_checkpoint_interval_is_the_plans_goodput(knowledge) -> None:
    """One interruption rate in an answer: the operations plan's checkpoint interval and mean time between
    interruptions are the plan's goodput figures (knowledge/assumptions.toml [goodput], Llama 3's 419
    interruptions), its checkpoint the plan's own write time, not a second rate and a fixed write."""
    plan, items = _ops_items(knowledge, Workload(model="llama-3.1-8b", kind="pretrain", tokens=2e11))
    good, reason = plan.goodput, items["checkpoint interval"].reason
    assert f"one interruption every {good.mtbf_h:,.0f} h" in reason, reason
    assert f"{good.checkpoint_s:,.0f} s write" in reason, reason
    setting = items["checkpoint interval"].setting
    assert f"~{good.checkpoint_interval_h * 60:.0f} min" in setting, (setting, good)


def _check_xid_rules(rules: dict) -> None:
    """DCGM_FI_DEV_XID_ERRORS is a gauge (the last Xid): alert on its changes, application Xids apart."""
    hard, app = rules["GPUXidError"]["expr"], rules["GPUApplicationXid"]["expr"]
    assert "increase(" not in hard + app and hard.startswith("changes(DCGM_FI_DEV_XID_ERRORS[")
    for xid in (13, 31, 43, 45):
        assert f"DCGM_FI_DEV_XID_ERRORS != {xid}" in hard and f"DCGM_FI_DEV_XID_ERRORS == {xid}" in app
    assert rules["GPUXidError"]["labels"]["severity"] == "critical"
    assert rules["GPUApplicationXid"]["labels"]["severity"] == "warning"


def _check_image(gpu, image: str) -> None:
    """The container's CUDA (in its tag) is at least the GPU architecture's minimum."""
    import re

    from advisor.ops.launch import MIN_CUDA

    cuda = tuple(int(x) for x in re.search(r"cuda(\d+)\.(\d+)", image).groups())  # type: ignore[union-attr]
    assert cuda >= MIN_CUDA[gpu.architecture.lower()], (gpu.id, image)


def _check_training_artefacts(report, knowledge) -> None:
    plan, launch = report.plans[0], report.launch
    per_node = plan.count // plan.nodes
    assert f"--nproc-per-node {per_node}" in launch.torchrun
    assert (f"--nnodes {plan.nodes}" in launch.torchrun) == (plan.nodes > 1)
    sky = yaml.safe_load(launch.skypilot_task)
    assert sky["num_nodes"] == plan.nodes and sky["resources"]["accelerators"].endswith(f":{per_node}")
    job = yaml.safe_load(launch.kubeflow_job)
    specs = job["spec"]["pytorchReplicaSpecs"]
    replicas = specs["Master"]["replicas"] + specs.get("Worker", {"replicas": 0})["replicas"]
    assert replicas == plan.nodes and job["spec"]["runPolicy"]["backoffLimit"] == 3
    container = specs["Master"]["template"]["spec"]["containers"][0]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == per_node
    # One process per GPU: the PyTorchJob launches through torchrun, never a bare `python train.py`.
    command = container["command"]
    assert command[0] == "torchrun" and command[command.index("--nproc-per-node") + 1] == str(per_node)
    assert command[command.index("--nnodes") + 1] == str(plan.nodes)
    _check_image(knowledge.gpu(plan.gpu), container["image"])
    rules = {r["alert"]: r for r in yaml.safe_load(launch.prometheus_rules)["groups"][0]["rules"]}
    exprs = " ".join(r["expr"] for r in rules.values())
    assert "DCGM_FI_DEV_GPU_UTIL" in exprs
    _check_xid_rules(rules)

    if launch.framework_config_name == "deepspeed.json":
        ds = json.loads(launch.framework_config)
        stage = {"zero1": 1, "zero2": 2, "zero3": 3}.get(plan.layout.sharding, 0)
        assert ds["zero_optimization"]["stage"] == stage
        assert ds["train_micro_batch_size_per_gpu"] == plan.layout.micro_batch
        assert ds["train_batch_size"] == plan.layout.micro_batch * plan.layout.grad_accum * plan.layout.dp
        assert ds.get("bf16", {}).get("enabled") == (plan.precision == "bf16")
    else:
        assert f"--tensor-model-parallel-size {plan.layout.tp}" in launch.framework_config
        assert f"--pipeline-model-parallel-size {plan.layout.pp}" in launch.framework_config
        assert ("--bf16" in launch.framework_config) == (plan.precision in ("bf16", "fp8"))


def test_artefacts_match_a_sharded_plan(knowledge) -> None:
    report = recommend(
        knowledge,
        Workload(model="llama-2-7b", kind="finetune", tokens=2e8),
        Constraints(gpus=("a100-40gb-sxm",), objective="cheapest"),
    )
    _check_training_artefacts(report, knowledge)


def test_artefacts_match_a_model_parallel_plan(knowledge, onprem) -> None:
    _check_training_artefacts(onprem, knowledge)


def test_artefacts_of_a_multi_node_tensor_parallel_plan(knowledge) -> None:
    report = recommend(
        knowledge,
        Workload(model="llama-3.1-405b", kind="pretrain", tokens=1e10),
        Constraints(gpus=("h100-sxm",), objective="fastest"),
    )
    assert report.plans[0].nodes > 1
    _check_training_artefacts(report, knowledge)


def test_blackwell_gets_a_container_with_its_cuda(knowledge) -> None:
    from advisor.ops.launch import MIN_CUDA, container_image

    assert "cuda12.8" in container_image(knowledge, "b200") and MIN_CUDA["blackwell"] == (12, 8)
    for gpu in knowledge.gpus:
        image = container_image(knowledge, gpu.id)
        if gpu.vendor == "amd":
            assert image.startswith("rocm/")
        else:
            _check_image(gpu, image)


def test_serving_artefacts(knowledge) -> None:
    report = recommend(
        knowledge, Workload(model="llama-3.1-8b", kind="inference", requests_per_s=5), Constraints(top=1)
    )
    plan, launch = report.plans[0], report.launch
    assert launch.serve and f"--tensor-parallel-size {plan.layout.tp}" in launch.serve
    sky = yaml.safe_load(launch.skypilot_task)
    assert sky["service"]["replicas"] == plan.serving.replicas


def _facts(**layout):
    from advisor.ops.plan_facts import PlanFacts

    base = dict(gpu="h100-sxm", count=64, nodes=8, precision="bf16", tp=1, pp=1, dp=64, sharding="zero1")
    return PlanFacts(**(base | dict(recompute="none", micro_batch=1, grad_accum=8, hours_p50=1.0) | layout))


def _parsed(args: list[str]) -> dict[str, str | bool]:
    """The Megatron-LM arguments as argparse would read them: flag -> value (True for a switch)."""
    import shlex

    from advisor.ops.launch import shell_args

    words, out, i = shlex.split(shell_args(args)), {}, 0
    while i < len(words):
        if i + 1 < len(words) and not words[i + 1].startswith("--"):
            out[words[i]], i = words[i + 1], i + 2
        else:
            out[words[i]], i = True, i + 1
    return out


def _layout_layers(layout: str) -> list[str]:
    """A --pipeline-model-parallel-layout string unrolled as Megatron-LM@00caa53af309's
    PipelineParallelLayerLayout.parse_str_to_list reads it: one string of layer letters per chunk."""
    import re

    for pattern in (r"\(([^)]+)\)\*(\d+)", r"(.)\*(\d+)"):
        layout = re.sub(pattern, lambda m: m.group(1) * int(m.group(2)), layout.replace(",", ""))
    return layout.split("|")


def test_megatron_arguments_reproduce_the_stated_layout() -> None:
    # Megatron-LM@00caa53af309 megatron/training/arguments.py and model_parallel_config.py: expert TP defaults
    # to TP, so a layout folding EP over the tensor-parallel ranks must say its expert TP.
    from advisor.ops.launch import megatron_args
    from advisor.physics.step_ops import chunk_sizes

    folded = _parsed(megatron_args(_facts(count=32, tp=2, dp=16, ep=32)))
    assert folded["--expert-model-parallel-size"] == "32" and folded["--expert-tensor-parallel-size"] == "1"
    plain = _parsed(megatron_args(_facts(count=64, tp=2, dp=32, ep=8, cp=1)))
    # EP divides DP: the experts still run whole (expert TP 1, Megatron-Bridge's MoE recipes), stated because
    # Megatron-LM's flag defaults to TP.
    assert plain["--expert-tensor-parallel-size"] == "1"
    assert _parsed(megatron_args(_facts(tp=2, cp=4, dp=8)))["--context-parallel-size"] == "4"
    dense = _parsed(megatron_args(_facts(tp=8, pp=4, dp=2), layers=32))
    assert not any(k.startswith("--expert") or "virtual" in k or "split" in k for k in dense)
    # Even chunks: the virtual stages alone.
    even = _parsed(megatron_args(_facts(tp=8, pp=4, dp=2, virtual=2), layers=32))
    assert (
        even["--num-virtual-stages-per-pipeline-rank"] == "2"
        and "--pipeline-model-parallel-layout" not in even
    )
    # Qwen3-235B's 94 layers on PP 32 x V 3: the embedding and the loss a chunk's layer each (96 = 94 + 2).
    qwen = _parsed(megatron_args(_facts(count=256, tp=1, pp=32, dp=8, ep=8, virtual=3), layers=94))
    assert qwen["--num-virtual-stages-per-pipeline-rank"] == "3"
    assert qwen["--account-for-embedding-in-pipeline-split"] is True
    assert qwen["--account-for-loss-in-pipeline-split"] is True
    # Llama 3.1 405B's 126 layers on PP 16 (no interleaving): the same two switches, first and last 7.
    assert "--account-for-loss-in-pipeline-split" in _parsed(megatron_args(_facts(pp=16, dp=4), layers=126))
    # Any other uneven split: the exact layout, which sets the virtual stages itself (never both).
    odd = _parsed(megatron_args(_facts(tp=2, pp=4, dp=8, virtual=2), layers=27))
    assert "--num-virtual-stages-per-pipeline-rank" not in odd
    chunks = _layout_layers(str(odd["--pipeline-model-parallel-layout"]))
    assert len(chunks) == 8 and chunks[0].startswith("E") and chunks[-1].endswith("L")
    assert [c.count("t") for c in chunks] == chunk_sizes(27, 8) and sum(c.count("t") for c in chunks) == 27


def test_a_launch_file_for_an_expert_parallel_plan_runs_megatron_with_it(knowledge) -> None:
    # A stated layout with EP (or CP) and no TP or PP is still Megatron's to run: DeepSpeed's JSON has no EP.
    from advisor.job.resolve import resolve_job
    from advisor.ops.launch import launch_artefacts

    job = resolve_job(knowledge, Workload(model="mixtral-8x7b", kind="pretrain", tokens=1e9), need_data=False)
    launch = launch_artefacts(knowledge, job, Constraints(), _facts(count=64, dp=64, ep=8, sharding="zero1"))
    assert launch.framework_config_name == "megatron-args.txt"
    assert "--expert-model-parallel-size 8" in launch.framework_config
    assert "--expert-tensor-parallel-size 1" in launch.framework_config
    entry = yaml.safe_load(launch.kubeflow_job)["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]
    command = entry["containers"][0]["command"]
    assert command[command.index("--expert-model-parallel-size") + 1] == "8"
