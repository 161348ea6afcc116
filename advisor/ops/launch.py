"""Provides launch artefacts for a chosen plan: torchrun, a DeepSpeed/Megatron config, a SkyPilot task, a
Kubeflow PyTorchJob and Prometheus alert rules, all derived from the plan's numbers."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass

from advisor.catalog.loader import Knowledge
from advisor.catalog.skypilot import skypilot_name, skypilot_names
from advisor.catalog.tco import Operations, load_tco
from advisor.job.inputs import Constraints
from advisor.job.layout import ZERO_STAGE, expert_tp
from advisor.job.resolve import Job
from advisor.ops import yaml
from advisor.ops.plan_facts import PlanFacts
from advisor.physics.step_ops import chunk_sizes
from advisor.question.vocab import DEFAULT_ENGINE

PORT = 29500

# Lowest CUDA release that compiles for each architecture (NVIDIA CUDA toolkit release notes: sm_70 in 9.0,
# sm_75 in 10.0, sm_80 in 11.0, sm_89/sm_90 in 11.8, sm_100 in 12.8; Blackwell needs 12.8, as the PyTorch 2.7
# release notes say: pytorch/pytorch.github.io PR #1989).
MIN_CUDA = {
    "volta": (9, 0),
    "turing": (10, 0),
    "ampere": (11, 0),
    "ada": (11, 8),
    "hopper": (11, 8),
    "blackwell": (12, 8),
}
# Container images whose tag states their CUDA; the first with CUDA >= the architecture's minimum is used.
# The CUDA 12.4 build still ships sm_70 (Volta) kernels; 12.8 builds are the first with Blackwell's.
IMAGES = (
    ((12, 4), "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-devel"),
    ((12, 8), "pytorch/pytorch:2.7.0-cuda12.8-cudnn9-devel"),
)
ROCM_IMAGE = "rocm/pytorch:latest"
# Xids that usually come from the application (illegal memory access, page faults, a reset channel, a
# stopped context), not the hardware: NVIDIA's Xid catalogue (docs.nvidia.com/deploy/xid-errors) lists 13, 31,
# 43 and 45 as possible user-application errors. DCGM_FI_DEV_XID_ERRORS is a gauge holding the last Xid.
APPLICATION_XIDS = (13, 31, 43, 45)


def container_image(knowledge: Knowledge, gpu_id: str) -> str:
    """The training container for a GPU: CUDA at least its architecture's minimum (ROCm for AMD parts)."""
    gpu = knowledge.gpu(gpu_id)
    if gpu.vendor == "amd":
        return ROCM_IMAGE
    need = MIN_CUDA.get(gpu.architecture.lower(), (12, 8))
    return next(image for cuda, image in IMAGES if cuda >= need) if need <= IMAGES[-1][0] else IMAGES[-1][1]


@dataclass(frozen=True, slots=True, kw_only=True, repr=False, eq=False)
class LaunchArtefacts:
    """Ready-to-use files for the chosen plan (text, in the format each tool reads)."""

    torchrun: str
    framework_config_name: str
    framework_config: str
    skypilot_task: str
    kubeflow_job: str | None = None
    prometheus_rules: str
    serve: str | None = None


def _gpus_per_node(plan: PlanFacts) -> int:
    return max(1, plan.count // max(plan.nodes, 1))


def deepspeed_config(plan: PlanFacts) -> dict:
    """DeepSpeed JSON for a data-parallel / ZeRO plan."""
    stage = ZERO_STAGE.get(plan.sharding, 0)
    config: dict = {
        "train_micro_batch_size_per_gpu": plan.micro_batch,
        "gradient_accumulation_steps": plan.grad_accum,
        "train_batch_size": plan.micro_batch * plan.grad_accum * plan.dp,
        "zero_optimization": {"stage": stage, "overlap_comm": True, "contiguous_gradients": True},
        "gradient_clipping": 1.0,
        "steps_per_print": 100,
    }
    if stage == 3:
        config["zero_optimization"]["stage3_gather_16bit_weights_on_model_save"] = True
    if plan.precision == "bf16":
        config["bf16"] = {"enabled": True}
    elif plan.precision in ("fp16", "fp8"):
        config["fp16"] = {"enabled": True, "loss_scale": 0, "initial_scale_power": 16}
    if plan.recompute != "none":
        config["activation_checkpointing"] = {
            "partition_activations": plan.tp > 1,
            "contiguous_memory_optimization": False,
        }
    return config


MEGATRON_ARGS = "NVIDIA/Megatron-LM@00caa53af309:megatron/training/arguments.py"
"""Where the Megatron-LM arguments below are defined and checked: --num-virtual-stages-per-pipeline-rank,
--pipeline-model-parallel-layout and --decoder-first/last-pipeline-num-layers in _add_distributed_args; the
parallel sizes (--context-parallel-size, --expert-model-parallel-size, --expert-tensor-parallel-size, which
defaults to the tensor-parallel size in validate_args) from megatron/core/model_parallel_config.py
ModelParallelConfig, and --account-for-embedding/loss-in-pipeline-split from megatron/core/transformer/
transformer_config.py TransformerConfig, whose __post_init__ checks that the layers plus the embedding and
the loss divide pipeline x virtual stages; the layout string's syntax and order (chunk c of the flattened
list on pipeline rank c mod pp) in megatron/core/transformer/pipeline_parallel_layer_layout.py."""


DISPATCHER_ARGS = {
    "alltoall": ("--moe-token-dispatcher-type alltoall",),
    "allgather": ("--moe-token-dispatcher-type allgather",),
    "deepep": ("--moe-token-dispatcher-type flex", "--moe-flex-dispatcher-backend deepep"),
}
"""Megatron-Core's dispatcher flags (NVIDIA/Megatron-LM@d98e8a64ddf3:megatron/core/transformer/moe/README.md,
"Token Dispatching"; transformer_config.py moe_token_dispatcher_type and
moe_flex_dispatcher_backend): stated, since the step priced the one named and Megatron-LM's default is
allgather."""


def megatron_args(plan: PlanFacts, layers: int = 0) -> list[str]:
    """Megatron-LM arguments reproducing a plan's layout (MEGATRON_ARGS): tensor, pipeline, context and
    expert parallel sizes (the expert tensor-parallel size explicit, so that a layout folding the experts
    over the tensor-parallel ranks runs as stated), the interleaved schedule's virtual stages, and, for a
    model of `layers` layers (0: unknown) that the pipeline chunks do not divide evenly, the split the step
    model priced (advisor/physics/step_ops.py chunk_sizes): the embedding and the loss counted as a layer each
    where that evens the chunks, otherwise the exact layout string. Each item is 'flag' or 'flag value', the
    value never holding a space but for --recompute-modules' names (shell quoting is the caller's:
    `shell_args`)."""
    args = [
        f"--tensor-model-parallel-size {plan.tp}",
        f"--pipeline-model-parallel-size {plan.pp}",
        f"--context-parallel-size {plan.cp}" if plan.cp > 1 else "",
        *(
            (
                f"--expert-model-parallel-size {plan.ep}",
                f"--expert-tensor-parallel-size {expert_tp(plan.tp, plan.cp * plan.dp, plan.ep)}",
                *DISPATCHER_ARGS[plan.moe_dispatcher],
            )
            if plan.ep > 1
            else ()
        ),
        *_pipeline_split(plan, layers),
        f"--micro-batch-size {plan.micro_batch}",
        f"--global-batch-size {plan.micro_batch * plan.grad_accum * plan.dp}",
        "--sequence-parallel" if plan.tp > 1 else "",
        "--use-distributed-optimizer" if plan.sharding in ("zero1", "zero2") else "",
        "--overlap-grad-reduce",
    ]
    if plan.precision in ("bf16", "fp8"):
        args.append("--bf16")
    if plan.precision == "fp8":
        args.append("--fp8-format hybrid")
    if plan.precision == "fp16":
        args.append("--fp16")
    if plan.recompute != "none":
        args.append(f"--recompute-granularity {plan.recompute}")
        if plan.recompute == "full":
            args.append("--recompute-method uniform")
        elif plan.recompute_modules:
            # Megatron-LM's --recompute-modules takes the names apart (nargs; NVIDIA/Megatron-LM@d98e8a64ddf3:
            # docs/user-guide/features/fine_grained_activation_offloading.md: --recompute-modules layernorm
            # moe_act): the one item whose value holds spaces, each name a word.
            args.append("--recompute-modules " + " ".join(plan.recompute_modules))
    return [a for a in args if a]


def _pipeline_split(plan: PlanFacts, layers: int) -> list[str]:
    """The virtual stages and, where the chunks are uneven, how Megatron-LM is told the step model's split."""
    virtual = [f"--num-virtual-stages-per-pipeline-rank {plan.virtual}"] if plan.virtual > 1 else []
    chunks = plan.pp * plan.virtual
    if plan.pp <= 1 or layers <= 0 or layers % chunks == 0:
        return virtual
    if (layers + 2) % chunks == 0:  # the embedding and the loss a layer each: first and last chunk one less
        return [*virtual, "--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split"]
    # Any other split (the first chunks one layer larger): the layout itself, which sets the virtual stages.
    stages = [f"t*{n}" for n in chunk_sizes(layers, chunks)]
    stages[0], stages[-1] = "E" + stages[0], stages[-1] + "L"
    return ["--pipeline-model-parallel-layout " + "|".join(stages)]


def shell_args(args: list[str]) -> str:
    """Megatron arguments as one shell line, each value quoted where the shell would read it (a layout's
    '|' and '*')."""
    return " ".join(" ".join(shlex.quote(word) for word in a.split(" ")) for a in args)


def prometheus_rules(knowledge: Knowledge, plan: PlanFacts) -> dict:
    """Alert rules on DCGM-exporter (and Kueue) metrics for the monitoring targets."""
    op = load_tco(knowledge).operations
    return {
        "groups": [
            {
                "name": f"gpu-advisor-{plan.gpu}-x{plan.count}",
                "rules": [*_utilisation_rules(op), *_xid_rules(), *_ecc_and_queue_rules(op)],
            }
        ]
    }


def _utilisation_rules(op: Operations) -> list[dict]:
    """Alerts on utilisation below the target and on too many idle GPUs."""
    util = round(op["target_utilization"].value * 100)
    idle = op["idle_max_fraction"].value
    return [
        {
            "alert": "GPUUtilisationBelowTarget",
            "expr": f"avg(DCGM_FI_DEV_GPU_UTIL) < {util}",
            "for": "1h",
            "labels": {"severity": "warning"},
            "annotations": {"summary": f"GPU utilisation below the {util}% target for an hour"},
        },
        {
            "alert": "GPUsIdle",
            "expr": f"count(DCGM_FI_DEV_GPU_UTIL < 5) / count(DCGM_FI_DEV_GPU_UTIL) > {idle}",
            "for": "30m",
            "labels": {"severity": "warning"},
            "annotations": {"summary": f"more than {idle:.0%} of GPUs idle: reclaim or scale in"},
        },
    ]


def _xid_rules() -> list[dict]:
    """Alerts on a new Xid: a hardware one drains the node, an application one points at the job's logs."""
    hardware_xid = " and ".join(f"DCGM_FI_DEV_XID_ERRORS != {x}" for x in APPLICATION_XIDS)
    app_xid = " or ".join(f"DCGM_FI_DEV_XID_ERRORS == {x}" for x in APPLICATION_XIDS)
    app_list = "/".join(str(x) for x in APPLICATION_XIDS)
    return [
        {
            "alert": "GPUXidError",
            "expr": f"changes(DCGM_FI_DEV_XID_ERRORS[10m]) > 0 and DCGM_FI_DEV_XID_ERRORS > 0 "
            f"and {hardware_xid}",
            "for": "0m",
            "labels": {"severity": "critical"},
            "annotations": {
                "summary": "a new hardware Xid (the gauge holds the last Xid; application Xids "
                f"{app_list} excluded): drain the node and run dcgmi diag -r 3"
            },
        },
        {
            "alert": "GPUApplicationXid",
            "expr": f"changes(DCGM_FI_DEV_XID_ERRORS[10m]) > 0 and ({app_xid})",
            "for": "0m",
            "labels": {"severity": "warning"},
            "annotations": {
                "summary": f"Xid {{{{ $value }}}} (one of {app_list}) usually comes from the job "
                f"itself: "
                "check its logs (compute-sanitizer) before draining the node"
            },
        },
    ]


def _ecc_and_queue_rules(op: Operations) -> list[dict]:
    """Alerts on uncorrectable ECC errors and on a P90 queue wait above the target (Kueue)."""
    return [
        {
            "alert": "GPUUncorrectableECC",
            "expr": "increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[1h]) > 0",
            "for": "0m",
            "labels": {"severity": "critical"},
            "annotations": {"summary": "double-bit ECC errors: schedule a replacement"},
        },
        {
            "alert": "QueueWaitAboveTarget",
            "expr": f"histogram_quantile(0.9, "
            f"sum(rate(kueue_admission_wait_time_seconds_bucket[30m])) by (le)) > "
            f"{op['max_queue_wait_min'].value * 60:.0f}",
            "for": "30m",
            "labels": {"severity": "warning"},
            "annotations": {
                "summary": f"P90 queue wait above {op['max_queue_wait_min'].value:.0f} min (Kueue)"
            },
        },
    ]


READINESS = {"tgi": "/health"}  # TGI answers health checks there; the OpenAI-style servers list /v1/models


def serve_command(job: Job, plan: PlanFacts) -> str:
    """The engine's own server command for the plan, from its launch template (knowledge/
    serving_engines.toml): the parallel layout, context and precision, and the engine flags the user set;
    the other caps are left at the engine's defaults, which are what the plan's latency was computed with."""
    from advisor.learned.serving.engines import engine

    eng = engine(plan.engine or DEFAULT_ENGINE)
    launch = eng.launch
    dtype = {"bf16": "bfloat16", "fp16": "float16"}.get(plan.precision, "auto")
    cmd = launch["command"].format(
        model=job.model_id,
        tp=plan.tp,
        pp=plan.pp,
        length=job.prompt_tokens + job.output_tokens,
        prompt=job.prompt_tokens,
        dtype=dtype,
    )
    cmd += launch.get("quantization", {}).get(plan.precision, "")
    if plan.precision == "fp8":
        cmd += launch.get("kv_fp8", "")
    for flag in ("max_num_seqs", "max_batched_tokens", "gpu_memory_utilization"):
        value = getattr(job.config, flag, None)
        if value is not None and launch.get(flag):
            cmd += launch[flag].format(value=f"{value:g}")
    return cmd


def launch_artefacts(
    knowledge: Knowledge, job: Job, constraints: Constraints, plan: PlanFacts
) -> LaunchArtefacts:
    """Every artefact for one plan."""
    per_node = _gpus_per_node(plan)
    restarts = int(load_tco(knowledge).operations["restart_limit"].value)
    rules = yaml.dump(prometheus_rules(knowledge, plan)) + "\n"
    resources = sky_resources(knowledge, plan, per_node, spot=constraints.pricing == "spot")
    if not job.training:
        return _serving_artefacts(job, plan, resources, rules)
    torchrun = _torchrun(job, plan, per_node, restarts)
    layers = job.arch.layers if job.arch is not None else 0
    args = megatron_args(plan, layers)
    if plan.tp > 1 or plan.pp > 1 or plan.cp > 1 or plan.ep > 1:
        name = "megatron-args.txt"
        config = " \\\n  ".join(shell_args([a]) for a in args) + "\n"
        launch = torchrun.replace("train.py", "pretrain_gpt.py " + shell_args(args))
    else:
        name = "deepspeed.json"
        config = json.dumps(deepspeed_config(plan), indent=2) + "\n"
        launch = torchrun.replace("train.py", "train.py --deepspeed deepspeed.json")
    run = launch.replace("$MASTER_ADDR", '$(echo "$SKYPILOT_NODE_IPS" | head -n1)')
    task = {
        "name": f"train-{job.model_id}",
        "num_nodes": plan.nodes,
        "resources": resources,
        "file_mounts": {f"~/sky_workdir/{name}": name},
        "run": run,
    }
    entry = (
        ["train.py", "--deepspeed", "deepspeed.json"]
        if name == "deepspeed.json"
        else ["pretrain_gpt.py", *" ".join(args).split()]
    )
    kubeflow = _kubeflow_job(knowledge, job, plan, per_node, restarts, entry)
    return LaunchArtefacts(
        torchrun=torchrun,
        framework_config_name=name,
        framework_config=config,
        skypilot_task=_sky_note(knowledge, plan) + yaml.dump(task) + "\n",
        kubeflow_job=yaml.dump(kubeflow) + "\n",
        prometheus_rules=rules,
    )


SKY_CLOUDS = ("aws", "gcp", "azure", "lambda", "oci", "runpod")
"""Providers that go in a SkyPilot task as its cloud; for any other the cloud is left out."""


def sky_resources(knowledge: Knowledge, plan: PlanFacts, per_node: int, *, spot: bool) -> dict:
    """The SkyPilot task's resources: the accelerators by SkyPilot's own name for the GPU on the plan's cloud
    (advisor/catalog/skypilot.py) and, for a cloud plan, its cloud and instance type. A GPU SkyPilot's
    catalogue has no name for is asked for by its instance type alone (the task's first line says so)."""
    cloud = plan.provider if plan.provider in SKY_CLOUDS else None
    name = skypilot_name(knowledge, plan.gpu, cloud)
    resources: dict = {"accelerators": f"{name}:{per_node}"} if name else {}
    resources["use_spot"] = spot
    if plan.provider is not None:
        resources["cloud"] = cloud
        resources["instance_type"] = plan.instance
        resources = {k: v for k, v in resources.items() if v is not None}
    return resources


def _sky_note(knowledge: Knowledge, plan: PlanFacts) -> str:
    """A first line for a SkyPilot task whose GPU SkyPilot's catalogue does not name ('' when it does)."""
    if skypilot_name(knowledge, plan.gpu) is not None:
        return ""
    return (
        f"# SkyPilot's catalogue names no accelerator {plan.gpu} ({skypilot_names(knowledge).source}): this "
        "task asks for the instance type only; without one, state the accelerator your cluster calls it.\n"
    )


def _serving_artefacts(job: Job, plan: PlanFacts, resources: dict, rules: str) -> LaunchArtefacts:
    """A serving plan's artefacts: the engine's server command and a SkyPilot service of its replicas."""
    assert plan.replicas is not None and plan.gpus_per_replica is not None
    serve = serve_command(job, plan)
    task: dict[str, object] = {
        "name": f"serve-{job.model_id}",
        "resources": {**resources, "ports": 8000},
        "service": {
            "readiness_probe": READINESS.get(plan.engine or DEFAULT_ENGINE, "/v1/models"),
            "replicas": plan.replicas,
        },
        "run": serve,
    }
    return LaunchArtefacts(
        torchrun="not applicable: serving",
        framework_config_name=f"{serve.split()[0]}-args.txt",
        framework_config=serve + "\n",
        skypilot_task=yaml.dump(task) + "\n",
        prometheus_rules=rules,
        serve=serve,
    )


def _torchrun(job: Job, plan: PlanFacts, per_node: int, restarts: int) -> str:
    """The torchrun command of a training plan: rendezvous across nodes, or standalone on one."""
    if plan.nodes > 1:
        return (
            f"torchrun --nnodes {plan.nodes} --nproc-per-node {per_node} --rdzv-backend c10d "
            f"--rdzv-endpoint $MASTER_ADDR:{PORT} --rdzv-id {job.model_id} --max-restarts {restarts} train.py"
        )
    return f"torchrun --standalone --nproc-per-node {per_node} --max-restarts {restarts} train.py"


def _kubeflow_job(
    knowledge: Knowledge, job: Job, plan: PlanFacts, per_node: int, restarts: int, entry: list[str]
) -> dict:
    """A Kubeflow PyTorchJob of the plan: one master and a worker replica per further node."""
    # torchrun starts one process per GPU; the operator supplies MASTER_ADDR, MASTER_PORT and the node rank.
    command = [
        "torchrun",
        "--nnodes",
        str(plan.nodes),
        "--nproc-per-node",
        str(per_node),
        "--max-restarts",
        str(restarts),
        *entry,
    ]
    replica = {
        "replicas": 1,
        "restartPolicy": "OnFailure",
        "template": {
            "spec": {
                "containers": [
                    {
                        "name": "pytorch",
                        "image": container_image(knowledge, plan.gpu),
                        "command": command,
                        "resources": {"limits": {"nvidia.com/gpu": per_node}},
                    }
                ]
            }
        },
    }
    specs = {"Master": replica}
    if plan.nodes > 1:
        specs["Worker"] = {**replica, "replicas": plan.nodes - 1}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": f"train-{job.model_id}".replace(".", "-")},
        "spec": {
            "nprocPerNode": str(per_node),
            "runPolicy": {"backoffLimit": restarts},
            "pytorchReplicaSpecs": specs,
        },
    }
