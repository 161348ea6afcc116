"""Provides benchmark_files(): the short run that settles a plan's most uncertain input on rented hardware:
a torchtitan run of a few dozen steps (full training; a plan on another stack says so plainly), the user's
own command of the plan's stack (adapters, which torchtitan does not train), or `vllm bench serve` against
the plan's server (serving), whose output `gpu-advisor calibrate` reads, with what to read from it."""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from advisor.job.resolve import Job
from advisor.ops.launch import PORT, serve_command
from advisor.ops.plan_facts import PlanFacts

STEPS = (20, 100)
"""Training steps run, fewest and most: about RUN_S of steps at the predicted step time. calibrate takes
the median tokens/s of the steps after the first (warm-up); torchtitan logs each step (log_freq 1)."""
RUN_S = 600.0
"""Seconds of steps aimed at: ten minutes measure a steady step on any plan without paying for a long run."""
ZERO = {"none": 0, "ddp": 0, "zero1": 1, "zero2": 2, "zero3": 3}
STARTUP_H = 0.25
"""Time to start: instance boot, image pull and the model's first compile (a planning figure for the cost
line, the operations plan's restart time)."""
PROMPTS = 200
"""Requests `vllm bench serve` sends: enough for P90 latencies at the plan's rate (vLLM's own examples use
100-1,000)."""
# torchtitan's model names and flavours for the catalogue's Llama 3 models (torchtitan/models/llama3:
# its train_configs/llama3_8b.toml, llama3_70b.toml, llama3_405b.toml).
TITAN_FLAVOURS = {
    "llama-3.1-8b": ("llama3", "8B", "llama3_8b.toml"),
    "llama-3.1-70b": ("llama3", "70B", "llama3_70b.toml"),
    "llama-3.1-405b": ("llama3", "405B", "llama3_405b.toml"),
    "llama-3-8b": ("llama3", "8B", "llama3_8b.toml"),
    "llama-3-70b": ("llama3", "70B", "llama3_70b.toml"),
}
# The plan's activation recomputation as torchtitan's --activation_checkpoint.mode.
TITAN_RECOMPUTE = {"none": "none", "selective": "selective", "full": "full"}
SCRIPTED = "torchtitan"
"""The one stack whose run is scripted end to end; a profile's runs move only plans of their own stack, so a
plan on another stack is told so (never a torchtitan run filed silently as the plan's)."""
TITAN_KINDS = ("pretrain", "finetune")
"""What the torchtitan run measures: full-parameter training (torchtitan.train trains no adapters)."""
# The log calibrate reads for each stack's own run (advisor/catalog/run_logs/): the Trainer-based toolkits
# log as the Hugging Face Trainer; any stack's measured figure fits a runs CSV.
STACK_LOGS = {
    **dict.fromkeys(
        ("hf", "trl", "axolotl", "llama-factory", "unsloth"),
        "its Hugging Face Trainer output (stdout with the final metrics, or trainer_state.json)",
    ),
    "megatron": "its Megatron-LM log (the iteration lines and the arguments dump)",
    "torchtitan": "its torchtitan log (the step lines' tps:)",
}
OTHER_LOG = "a runs CSV (the knowledge/benchmarks.csv schema) with the throughput you measured"


@dataclass(frozen=True, slots=True, repr=False)
class BenchmarkInputs:
    """What a benchmark script is written from: the job, the chosen plan and what the answer hinges on."""

    job: Job
    plan: PlanFacts
    cp: int
    ep: int
    settles: str
    """The answer's 'would change' line: what the run decides."""
    usd_per_hour: float


def benchmark_files(b: BenchmarkInputs) -> dict[str, str]:
    """The script (benchmark.sh) and what to do with its output (BENCHMARK.md)."""
    if b.job.training:
        script, readme = _training(b)
    else:
        script, readme = _serving(b)
    return {"benchmark.sh": script, "BENCHMARK.md": readme}


def _titan_layout(plan: PlanFacts, cp: int, ep: int) -> list[str]:
    """torchtitan's parallelism flags for the plan's layout: FSDP (ZeRO-3) shards over its data-parallel
    ranks, ZeRO-2 keeps parameters gathered after forward, DDP (and ZeRO-0/1) replicates."""
    shard, replicate = (plan.dp, 1) if plan.sharding in ("zero3", "zero2") else (1, plan.dp)
    flags = [
        f"--parallelism.data_parallel_shard_degree {shard}",
        f"--parallelism.data_parallel_replicate_degree {replicate}",
        f"--parallelism.tensor_parallel_degree {plan.tp}",
        f"--parallelism.pipeline_parallel_degree {plan.pp}",
        f"--parallelism.context_parallel_degree {cp}",
        f"--parallelism.expert_parallel_degree {ep}",
    ]
    if plan.sharding == "zero2":
        flags.append("--parallelism.fsdp_reshard_after_forward never")
    if plan.pp > 1:
        flags.append(f"--parallelism.pipeline_parallel_microbatch_size {plan.micro_batch}")
    return flags


def _batch_flags(job: Job, plan: PlanFacts) -> list[str]:
    """The plan's batch: torchtitan's local batch is one rank's per step before accumulation (a pipeline's
    whole batch, split into micro-batches); the global batch sets the accumulation."""
    local = plan.micro_batch * (plan.grad_accum if plan.pp > 1 else 1)
    global_batch = plan.micro_batch * plan.grad_accum * plan.dp
    return [
        f"--training.seq_len {job.seq_len}",
        f"--training.local_batch_size {local}",
        f"--training.global_batch_size {global_batch}",
    ]


def _gpus_per_node(plan: PlanFacts) -> int:
    return max(1, plan.count // max(1, plan.nodes))


def _training(b: BenchmarkInputs) -> tuple[str, str]:
    if b.job.kind not in TITAN_KINDS:
        return _own_command(b)
    return _titan(b)


def _stack_words(job: Job) -> str:
    """'' for a torchtitan plan; else what the torchtitan run is and is not, for the plan's own stack."""
    if job.stack == SCRIPTED:
        return ""
    return (
        f"the plan assumed the {job.stack} stack, and only torchtitan is scripted: this run measures "
        "torchtitan on the plan's GPUs and layout, and calibrate files it under torchtitan (a profile's runs "
        f"move only plans of their own stack). To settle the {job.stack} plan itself, run your {job.stack} "
        f"job at this layout and give {STACK_LOGS.get(job.stack, OTHER_LOG)} to the same calibrate "
        f"command with --stack {job.stack}."
    )


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def _comment(text: str) -> str:
    """Text as shell comment lines of at most about 110 characters."""
    import textwrap

    return "\n".join("# " + line for line in textwrap.wrap(text, 106)) + "\n" if text else ""


def _titan(b: BenchmarkInputs) -> tuple[str, str]:
    job, plan = b.job, b.plan
    name, flavour, config = TITAN_FLAVOURS.get(job.model_id, ("", "", ""))
    per_node = _gpus_per_node(plan)
    rdzv = (
        f"--nnodes {plan.nodes} --nproc-per-node {per_node} --rdzv-backend c10d "
        f'--rdzv-endpoint "$MASTER_ADDR:{PORT}" --rdzv-id bench-{job.model_id}'
        if plan.nodes > 1
        else f"--standalone --nproc-per-node {per_node}"
    )
    steps = _steps(plan)
    flags = [
        '--job.config_file "$CONFIG"',
        f"--training.steps {steps}",
        "--training.dataset c4_test",
        "--metrics.log_freq 1",
        *_batch_flags(job, plan),
        *_titan_layout(plan, b.cp, b.ep),
        f"--activation_checkpoint.mode {TITAN_RECOMPUTE.get(plan.recompute, 'none')}",
    ]
    if name:
        flags[1:1] = [f"--model.name {name}", f"--model.flavor {flavour}"]
    default_config = f"torchtitan/models/llama3/train_configs/{config}" if config else ""
    body = " \\\n  ".join(flags)
    multi = (
        'if [ -z "${MASTER_ADDR:-}" ]; then echo "set MASTER_ADDR to the first node\'s address and run this '
        f'on each of the {plan.nodes} nodes" >&2; exit 2; fi\n'
        if plan.nodes > 1
        else ""
    )
    script = f"""#!/usr/bin/env bash
# gpu-advisor benchmark: {job.model_name} {job.kind} on {plan.gpu} x{plan.count} ({_layout_words(plan, b)}),
# {steps} steps of torchtitan. What it settles: {b.settles.removeprefix("would change: ")}
# Run from a torchtitan checkout (github.com/pytorch/torchtitan) with its tokenizer downloaded.
{_comment(_sentence(_stack_words(job)))}set -euo pipefail
CONFIG="${{CONFIG:-{default_config}}}"
LOG="${{LOG:-benchmark-{job.model_id}.log}}"
if [ -z "$CONFIG" ] || [ ! -f "$CONFIG" ]; then
  echo "set CONFIG to torchtitan's train config for {job.model_name} (not found: '$CONFIG')" >&2; exit 2
fi
{multi}torchrun {rdzv} -m torchtitan.train \\
  {body} 2>&1 | tee "$LOG"
echo "read: the 'tps:' of the step lines (tokens/s per GPU) after the first; then:" >&2
echo "  {_calibrate_command(job, plan, b, "$LOG", SCRIPTED)}" >&2
"""
    cost = _run_cost(plan, b.usd_per_hour, steps * (plan.step_s_p50 or 0.0) / 3600.0)
    return script, _training_readme(job, plan, b, cost, steps)


def _own_command(b: BenchmarkInputs) -> tuple[str, str]:
    """Adapters (LoRA, QLoRA), which torchtitan does not train: a script that runs the user's own command of
    the plan's stack, keeps its log and prints the calibrate command for that stack and workload."""
    job, plan = b.job, b.plan
    steps = _steps(plan)
    settles = b.settles.removeprefix("would change: ")
    calibrate = _calibrate_command(job, plan, b, "$LOG", job.stack)
    head = (
        f"The plan assumed the {job.stack} stack, and only torchtitan's full-parameter training is scripted "
        f"(it trains no adapters): give this script your own {job.stack} {job.kind} command of the plan's "
        f"layout, about {steps} steps of it. It runs the command, keeps its log and prints the calibrate "
        f"command, which reads {STACK_LOGS.get(job.stack, OTHER_LOG)}."
    )
    script = f"""#!/usr/bin/env bash
# gpu-advisor benchmark: {job.model_name} {job.kind} on {plan.gpu} x{plan.count} ({_layout_words(plan, b)}).
# What it settles: {settles}
{_comment(head)}set -euo pipefail
LOG="${{LOG:-benchmark-{job.model_id}.log}}"
if [ "$#" -eq 0 ]; then
  echo "usage: bash benchmark.sh YOUR {job.stack} TRAINING COMMAND... (some {steps} steps of this layout)" >&2
  exit 2
fi
"$@" 2>&1 | tee "$LOG"
echo "then:" >&2
echo "  {calibrate}" >&2
"""
    cost = _run_cost(plan, b.usd_per_hour, steps * (plan.step_s_p50 or 0.0) / 3600.0)
    readme = f"""# Benchmark of the chosen plan

{job.model_name} {job.kind} on {plan.gpu} x{plan.count} ({plan.nodes} node(s)): {_layout_words(plan, b)}.

What it settles: {settles}

What it costs: {cost}.

{head}

1. `bash benchmark.sh YOUR {job.stack} TRAINING COMMAND...` ({plan.nodes} node(s)). It writes `$LOG`
   (`benchmark-{job.model_id}.log`).
2. Feed it to gpu-advisor, which stores the run in a profile and shows the prediction before and after:

       {_calibrate_command(job, plan, b, f"benchmark-{job.model_id}.log", job.stack)}

3. Re-run `gpu-advisor recommend ... --profile benchmark`: the plans are re-timed on your measured
   efficiency.
"""
    return script, readme


def _steps(plan: PlanFacts) -> int:
    """About RUN_S of steps at the predicted step time, within STEPS."""
    step = plan.step_s_p50 or 1.0
    return int(min(STEPS[1], max(STEPS[0], round(RUN_S / step))))


def _layout_words(plan: PlanFacts, b: BenchmarkInputs) -> str:
    parts = [f"tp {plan.tp}", f"pp {plan.pp}", f"dp {plan.dp}", plan.sharding, f"recompute {plan.recompute}"]
    if b.cp > 1:
        parts.insert(2, f"cp {b.cp}")
    return ", ".join(parts) + f", micro-batch {plan.micro_batch} x {plan.grad_accum}"


def _calibrate_command(job: Job, plan: PlanFacts, b: BenchmarkInputs, file: str, stack: str = "") -> str:
    """The calibrate command that reads the run, with what the file does not say (its layout as given, and
    the stack that ran it)."""
    parts = [
        "gpu-advisor calibrate",
        file,
        f"--gpu {plan.gpu}",
        f"--count {plan.count if job.training else (plan.gpus_per_replica or plan.count)}",
        f"--model {job.model_id}",
        f"--workload {job.kind}",
    ]
    if job.training:
        parts += [
            f"--seq-len {job.seq_len}",
            f"--tp {plan.tp}",
            f"--pp {plan.pp}",
            f"--dp {plan.dp}",
            f"--zero {ZERO.get(plan.sharding, 0)}",
            f"--recompute {plan.recompute}",
            f"--micro-batch {plan.micro_batch}",
            f"--global-batch {plan.micro_batch * plan.grad_accum * plan.dp}",
            f"--stack {stack}",
        ]
        if b.cp > 1:
            parts.insert(-1, f"--cp {b.cp}")
    else:
        parts += [
            f"--prompt-tokens {job.prompt_tokens}",
            f"--output-tokens {job.output_tokens}",
            f"--tp {plan.tp}",
            f"--engine {plan.engine or 'vllm'}",
        ]
    return " ".join(parts) + " --profile benchmark"


def _run_cost(plan: PlanFacts, usd_per_hour: float, run_h: float) -> str:
    hours = run_h + STARTUP_H
    return (
        f"about {hours * 60:,.0f} min of the plan's {plan.count:,} GPUs (the run, plus ~{STARTUP_H * 60:.0f} "
        f"min to start), ${usd_per_hour * hours:,.0f} at ${usd_per_hour:,.2f}/h"
    )


def _training_readme(job: Job, plan: PlanFacts, b: BenchmarkInputs, cost: str, steps: int) -> str:
    return f"""# Benchmark of the chosen plan

{job.model_name} {job.kind} on {plan.gpu} x{plan.count} ({plan.nodes} node(s)): {_layout_words(plan, b)}.

What it settles: {b.settles.removeprefix("would change: ")}
{_readme_stack(job)}
What it costs: {cost}. The run is the plan as given; one node of the same layout measures the GPU's
efficiency without the network between instances (then give that node's `--count` and `--dp` to calibrate).

1. `bash benchmark.sh` from a torchtitan checkout ({plan.nodes} node(s); with more than one, set `MASTER_ADDR`
   and run it on every node). It runs {steps} steps and writes `$LOG`
   (`benchmark-{job.model_id}.log`).
2. Read torchtitan's step lines: `step: 10  loss: ...  memory: ...GiB(...%)  tps: 3,456  tflops: ...
   mfu: ...%`. `tps` is tokens per second per GPU; the first steps warm up.
3. Feed it to gpu-advisor, which reads torchtitan's log, stores the run in a profile and shows the
   prediction before and after:

       {_calibrate_command(job, plan, b, f"benchmark-{job.model_id}.log", SCRIPTED)}

4. Re-run `gpu-advisor recommend ...{_titan_flag(job)} --profile benchmark`:
   the plans are re-timed on your measured efficiency, and the order is settled.
"""


def _titan_flag(job: Job) -> str:
    return "" if job.stack == SCRIPTED else " --stack torchtitan"


def _readme_stack(job: Job) -> str:
    words = _stack_words(job)
    return f"\n{_sentence(words)}\n" if words else ""


def _serving(b: BenchmarkInputs) -> tuple[str, str]:
    job, plan = b.job, b.plan
    serve = serve_command(job, plan)
    words = shlex.split(serve)
    model = words[2] if len(words) > 2 and words[:2] == ["vllm", "serve"] else job.model_id
    backend = "vllm" if words[:1] == ["vllm"] else "openai"
    rate = f"{job.requests_per_s:g}" if job.requests_per_s else "inf"
    bench = (
        f"vllm bench serve --backend {backend} --base-url http://127.0.0.1:8000 --model {shlex.quote(model)} "
        f"--dataset-name random --random-input-len {job.prompt_tokens} --random-output-len "
        f"{job.output_tokens} --num-prompts {PROMPTS} --request-rate {rate} --percentile-metrics "
        '"ttft,tpot,itl,e2el" --metric-percentiles "50,90,99" --save-result --result-filename "$RESULT"'
    )
    gpus = plan.gpus_per_replica or plan.count
    script = f"""#!/usr/bin/env bash
# gpu-advisor benchmark: {job.model_name} serving on {plan.gpu} (one replica of {gpus}
# GPU(s)) at {rate} requests/s. What it settles: {b.settles.removeprefix("would change: ")}
set -euo pipefail
RESULT="${{RESULT:-benchmark-{job.model_id}.json}}"
{serve} &
SERVER=$!
trap 'kill $SERVER' EXIT
until curl -sf http://127.0.0.1:8000/v1/models >/dev/null; do sleep 5; done
{bench}
echo "read: mean/median/p99 TTFT and TPOT (ms) and output tokens/s in $RESULT; then:" >&2
echo "  {_calibrate_command(job, plan, b, "$RESULT")}" >&2
"""
    cost = _run_cost(plan, b.usd_per_hour / max(1, plan.replicas or 1), PROMPTS / 3600.0)
    readme = f"""# Benchmark of the chosen serving plan

{job.model_name} on {plan.gpu}: one replica of the plan ({gpus} GPU(s)), {PROMPTS}
requests of {job.prompt_tokens} prompt and {job.output_tokens} output tokens at {rate} requests/s.

What it settles: {b.settles.removeprefix("would change: ")}

What it costs: {cost}.

1. `bash benchmark.sh` on one instance of the plan: it starts the server, waits for it, runs
   `vllm bench serve` and writes `$RESULT` (vLLM's `--save-result` JSON).
2. Read from it `median_ttft_ms`, `p99_ttft_ms`, `median_tpot_ms`, `p99_tpot_ms` and `output_throughput`.
3. Feed it to gpu-advisor:

       {_calibrate_command(job, plan, b, f"benchmark-{job.model_id}.json")}
"""
    return script, readme
