"""Provides the readers of training logs: torchtitan, the Hugging Face Trainer, Megatron-LM and NeMo.

Each reads the lines its tool prints, as that tool's code writes them:
- torchtitan: `step: 10  loss: ...  memory: ...GiB(...%)  tps: 3,456  tflops: ...  mfu: ...%`, tps being
  tokens per second per GPU (pytorch/torchtitan@00fbaafa6ea1b54dd1a9b451a648f196781e8b26:
  torchtitan/components/metrics.py, MetricsProcessor.log).
- Hugging Face Trainer: its run header (`Instantaneous batch size per device = 4`, `Total train batch size
  (w. parallel, distributed & accumulation) = 32`, `Gradient Accumulation steps = 2`) and the final metrics
  dict `{'train_runtime': ..., 'train_samples_per_second': ..., ...}` printed by ProgressCallback, or the
  same dict in trainer_state.json's log_history (huggingface/transformers: src/transformers/trainer.py,
  trainer_utils.py speed_metrics, trainer_callback.py).
- Megatron-LM: ` iteration 10/ 100 | consumed samples: ... | elapsed time per iteration (ms): 1234.5 |
  throughput per GPU (TFLOP/s/GPU): ... | ... | global batch size: 512 |` and its arguments dump
  (`  seq_length ........ 4096`) (NVIDIA/Megatron-LM@86df799dc4c78e4bd7fbae972b3ee743e8b14f02:
  megatron/training/training.py, training_log; megatron/training/arguments.py, _print_args).
- NeMo (Lightning's progress bar): `... global_step=50.0, consumed_samples=76800.0, train_step_timing in
  s=5.900 ...` (NeMo's performance guides grep `train_step_timing`).
- Lightning's ThroughputMonitor, as a CSVLogger's metrics.csv: columns `device/samples_per_sec` and
  `device/items_per_sec` (per device; the separator '/' or '|', under a stage prefix such as `train|`)
  (Lightning-AI/pytorch-lightning@0810121fef07bc70c1bf4706a81ecb47d2e6ad17:
  src/lightning/fabric/utilities/throughput.py, Throughput.compute).
"""

from __future__ import annotations

import ast
import csv
import io
import json
import re
import statistics
from typing import Any

from advisor.catalog.run_logs.reading import Reading

ANSI = re.compile(r"\x1b\[[0-9;]*m")
_TITAN = re.compile(r"(?<!validate )step:\s*(\d+)\s+loss:.*?\btps:\s*([\d,]+)")
_TITAN_MFU = re.compile(r"\bmfu:\s*([\d.]+)%")
_HF_DICT = re.compile(r"\{[^{}]*'train_samples_per_second'[^{}]*\}")
_HF_HEADER = {
    "batch_size": re.compile(r"Instantaneous batch size per device\s*=\s*([\d,]+)"),
    "global_batch": re.compile(
        r"Total train batch size \(w\. parallel, distributed & accumulation\)\s*=\s*([\d,]+)"
    ),
    "grad_accum": re.compile(r"Gradient Accumulation steps\s*=\s*([\d,]+)"),
}
_MEGATRON = re.compile(r"iteration\s+(\d+)\s*/\s*\d+\s*\|.*?elapsed time per iteration \(ms\):\s*([\d.]+)")
_MEGATRON_GBS = re.compile(r"global batch size:\s*(\d+)")
_MEGATRON_ARG = re.compile(r"^\s+([a-z_0-9]+) \.{2,} (\S+)\s*$")
_MEGATRON_ARGS = {
    "seq_length": "seq_len",
    "micro_batch_size": "batch_size",
    "global_batch_size": "global_batch",
    "tensor_model_parallel_size": "tp",
    "pipeline_model_parallel_size": "pp",
    "context_parallel_size": "cp",
    "expert_model_parallel_size": "ep",
    "world_size": "count",
}
_NEMO = re.compile(r"train_step_timing in s=([\d.]+)")
_NEMO_STEP = re.compile(r"global_step=([\d.]+)")
_NEMO_SAMPLES = re.compile(r"consumed_samples=([\d.]+)")


def _int(text: str) -> int:
    return int(text.replace(",", ""))


def _steady(values: list[float]) -> float:
    """The median of the logged values after the first (compilation and warm-up), or the only one."""
    return statistics.median(values[1:] if len(values) > 1 else values)


def torchtitan(text: str, source: str) -> Reading | None:
    """torchtitan's step lines: tokens per second per GPU."""
    found = [
        (int(m.group(1)), _int(m.group(2)), line)
        for line in text.splitlines()
        if (m := _TITAN.search(ANSI.sub("", line)))
    ]
    if not found:
        return None
    tps = _steady([float(t) for _, t, _ in found])
    lines = [
        f"{len(found)} step line(s) (steps {found[0][0]}-{found[-1][0]}); tokens/s per GPU: median "
        f"{tps:,.0f} of the steps after the first (warm-up)"
    ]
    mfu = [float(m.group(1)) for _, _, line in found if (m := _TITAN_MFU.search(ANSI.sub("", line)))]
    if mfu:
        lines.append(
            f"torchtitan's own MFU: median {_steady(mfu):.1f}% (not used: its FLOP count is its own)"
        )
    return Reading(
        "torchtitan",
        "training",
        source,
        {"stack": "torchtitan"},
        {"tokens_per_s_per_gpu": tps},
        tuple(lines),
        (("count", "tps is per GPU"),),
    )


def _hf_metrics(text: str) -> dict[str, Any] | None:
    """The Trainer's final metrics: from trainer_state.json's log_history, or the printed dict."""
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            state = json.loads(stripped)
        except ValueError:
            state = None
        if isinstance(state, dict) and isinstance(state.get("log_history"), list):
            for entry in reversed(state["log_history"]):
                if isinstance(entry, dict) and "train_samples_per_second" in entry:
                    return {**entry, "_from": "trainer_state.json log_history", "_state": state}
            return {}
    found = _HF_DICT.findall(text)
    if not found:
        return None
    try:
        value = ast.literal_eval(found[-1])
    except (ValueError, SyntaxError):
        return {}
    return {**value, "_from": "the final metrics line"} if isinstance(value, dict) else {}


def hf_trainer(text: str, source: str) -> Reading | None:
    """The Trainer's samples per second (all GPUs) and the batch sizes its header prints."""
    metrics = _hf_metrics(text)
    if metrics is None:
        return None
    rate = metrics.get("train_samples_per_second")
    if isinstance(rate, str):
        rate = float(rate) if re.fullmatch(r"[\d.]+", rate) else None
    if not isinstance(rate, (int, float)) or isinstance(rate, bool) or rate <= 0:
        return Reading("hf-trainer", "training", source)  # a Trainer log without its throughput
    inputs: dict[str, Any] = {"stack": "hf"}
    lines = [f"train_samples_per_second {rate:g} (all GPUs; {metrics['_from']})"]
    state = metrics.get("_state") or {}
    if isinstance(state.get("train_batch_size"), int):
        inputs["batch_size"] = state["train_batch_size"]
        lines.append(f"train_batch_size {state['train_batch_size']} per device (trainer_state.json)")
    for name, pattern in _HF_HEADER.items():
        if m := pattern.search(text):
            inputs[name] = _int(m.group(1))
            lines.append(f"{m.group(0).strip()} (run header)")
    accum = inputs.pop("grad_accum", None)
    if "global_batch" in inputs and "batch_size" in inputs and accum:
        count, rest = divmod(inputs["global_batch"], inputs["batch_size"] * accum)
        if not rest and count >= 1:
            inputs["count"] = count
            lines.append(f"GPUs = total batch / (per device x accumulation) = {count}")
    return Reading(
        "hf-trainer",
        "training",
        source,
        inputs,
        {"samples_per_s": float(rate)},
        tuple(lines),
        (("seq_len", "the Trainer counts samples; tokens per sample are needed for tokens/s"),),
    )


def _megatron_layout(arg: str, value: str) -> dict[str, Any]:
    """What the arguments dump says of the layout beyond the sizes (it prints every argument, None where
    unset: NVIDIA/Megatron-LM@d98e8a64 megatron/training/arguments.py _print_args): the recomputation, the
    interleaved schedule's virtual stages and the distributed optimizer (ZeRO-1: optimizer states sharded)."""
    if arg == "recompute_granularity" and value in ("None", "full", "selective"):
        return {"recompute": "none" if value == "None" else value}
    if arg == "virtual_pipeline_model_parallel_size" and (value == "None" or value.isdigit()):
        return {"pp_schedule": "1f1b" if value in ("None", "1") else f"interleaved:{value}"}
    if arg == "use_distributed_optimizer" and value in ("True", "False"):
        return {"zero": 1 if value == "True" else 0}
    return {}


def megatron(text: str, source: str) -> Reading | None:
    """Megatron-LM's iteration lines (step time, global batch) and its printed arguments."""
    steps, gbs, inputs, lines = [], [], {}, []
    for line in text.splitlines():
        if m := _MEGATRON.search(line):
            steps.append(float(m.group(2)) / 1000.0)
            if g := _MEGATRON_GBS.search(line):
                gbs.append(int(g.group(1)))
        elif (a := _MEGATRON_ARG.match(line)) and a.group(1) in _MEGATRON_ARGS:
            value = a.group(2)
            if value.isdigit():
                inputs[_MEGATRON_ARGS[a.group(1)]] = int(value)
                lines.append(f"argument {a.group(1)} = {value}")
        elif a and (said := _megatron_layout(a.group(1), a.group(2))):
            inputs.update(said)
            lines.append(f"argument {a.group(1)} = {a.group(2)}")
    if inputs.get("pp", 1) == 1:
        inputs.pop("pp_schedule", None)  # a schedule only where there is a pipeline
    if not steps:
        if "elapsed time per iteration" in text or "------------------------ arguments" in text:
            return Reading("megatron", "training", source)
        return None
    step = _steady(steps)
    if gbs:
        inputs["global_batch"] = gbs[-1]
    lines.insert(
        0,
        f"{len(steps)} iteration line(s): elapsed time per iteration median {step * 1000:,.1f} ms "
        f"(after the first){f'; global batch size {gbs[-1]}' if gbs else ''}",
    )
    return Reading(
        "megatron",
        "training",
        source,
        {"stack": "megatron", **inputs},
        {"step_s": step},
        tuple(lines),
        (
            ("global_batch", "tokens per step = global batch x sequence"),
            ("seq_len", "tokens per step = global batch x sequence"),
        ),
    )


def nemo(text: str, source: str) -> Reading | None:
    """NeMo's progress-bar step timing; the global batch from consumed samples over steps."""
    times = [float(m.group(1)) for m in _NEMO.finditer(text)]
    if not times:
        return None
    step = _steady(times)
    inputs: dict[str, Any] = {"stack": "megatron"}
    lines = [f"{len(times)} train_step_timing value(s): median {step:.3f} s (after the first)"]
    steps, samples = _NEMO_STEP.findall(text), _NEMO_SAMPLES.findall(text)
    if steps and samples and float(steps[-1]) > 0:
        gbs = float(samples[-1]) / float(steps[-1])
        if gbs == int(gbs):
            inputs["global_batch"] = int(gbs)
            lines.append(
                f"global batch = consumed_samples {samples[-1]} / global_step {steps[-1]} = {int(gbs)}"
            )
    return Reading(
        "nemo",
        "training",
        source,
        inputs,
        {"step_s": step},
        tuple(lines),
        (
            ("global_batch", "tokens per step = global batch x sequence"),
            ("seq_len", "tokens per step = global batch x sequence"),
        ),
    )


_LIGHTNING = re.compile(r"(?:^|[|/])device[|/](items|samples)_per_sec$")


def lightning(text: str, source: str) -> Reading | None:
    """ThroughputMonitor's per-device rates from a metrics.csv: items (tokens) per second, else samples."""
    head = text.lstrip("\ufeff").split("\n", 1)[0]
    if "_per_sec" not in head or "," not in head:
        return None
    try:
        rows = list(csv.DictReader(io.StringIO(text.lstrip("\ufeff"))))
    except csv.Error:
        return None
    columns = {m.group(1): c for c in (rows[0].keys() if rows else ()) if c and (m := _LIGHTNING.search(c))}
    if not columns:
        return None
    for what in ("items", "samples"):
        if what not in columns:
            continue
        values = [float(v) for r in rows if (v := (r.get(columns[what]) or "").strip()) and _is_number(v)]
        if not values:
            continue
        rate = _steady(values)
        line = f"{columns[what]}: median {rate:,.6g} per device ({len(values)} logged; the first left out)"
        if what == "items":
            return Reading(
                "lightning",
                "training",
                source,
                {},
                {"tokens_per_s_per_gpu": rate},
                (line,),
                (("count", "the rates are per device"),),
            )
        return Reading(
            "lightning",
            "training",
            source,
            {},
            {"samples_per_s_per_gpu": rate},
            (line,),
            (("count", "the rates are per device"), ("seq_len", "tokens per sample")),
        )
    return Reading("lightning", "training", source)


def _is_number(text: str) -> bool:
    try:
        return float(text) > 0
    except ValueError:
        return False
