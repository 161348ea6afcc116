"""Provides a user's measured run made ready to calibrate on: the file's values and the flags merged, the
measurement in predict's unit, the uncalibrated prediction for exactly that configuration, and the stored
record."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from advisor.answer.predict import Prediction, predict
from advisor.answer.step_out import RESIDUAL
from advisor.catalog.loader import Knowledge
from advisor.catalog.run_logs import Reading
from advisor.catalog.run_store import ServingFit, StoredRun
from advisor.job.door import question
from advisor.job.inputs import STACKS, Constraints, Workload
from advisor.learned.calibration.points import serving_point, step_shares, training_point
from advisor.learned.efficiency import EfficiencyModel
from advisor.question.checks import shown
from advisor.question.errors import InputError
from advisor.question.fields import FIELDS, flag_of
from advisor.question.records import dump

# The workload a log's tool implies when the user does not say (predict's own default is fine-tuning for a
# catalogue LLM): pre-training stacks pre-train, the Trainer fine-tunes.
KIND_OF_FORMAT = {
    "torchtitan": "pretrain",
    "megatron": "pretrain",
    "nemo": "pretrain",
    "hf-trainer": "finetune",
    "csv": "pretrain",  # the benchmark schema's runs are training throughput
}
# The stack a log's tool implies when neither the file nor --stack names one: a Lightning ThroughputMonitor
# metrics.csv is plain PyTorch modules under Lightning's strategies, which the catalogue answers as fsdp
# (knowledge/training_stacks.toml: "the Lightning/FlashAttention scripts as fsdp"; lit-gpt runs_as fsdp),
# not the fine-tuning default (trl) that predict would choose for a run naming none.
STACK_OF_FORMAT = {"lightning": "fsdp"}
_WORKLOAD_KEYS = frozenset(n for n, f in FIELDS.items() if f.part == "workload")
_CONFIG_KEYS = frozenset(n for n, f in FIELDS.items() if f.part == "config")


@dataclass(frozen=True, slots=True, repr=False)
class ReadyRun:
    """One run with everything predict needs, and what it measured in predict's units."""

    reading: Reading
    workload: Workload
    gpu: str
    count: int
    key: str
    measured: dict[str, float]
    said: tuple[str, ...]
    """Where each value came from (file or flag), for --dry-run."""


def _model_of(knowledge: Knowledge, values: dict[str, Any]) -> None:
    """A model id a result file names (e.g. meta-llama/Llama-3.1-8B-Instruct) as the catalogue's, or none."""
    name = values.get("model")
    if not isinstance(name, str):
        return
    for candidate in (name, name.split("/")[-1], name.split("/")[-1].removesuffix("-Instruct")):
        try:
            values["model"] = knowledge.model(candidate).id
            return
        except InputError:
            continue
    values["_unknown_model"] = values.pop("model")


def merged(knowledge: Knowledge, reading: Reading, flags: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The file's values under the flags (a flag wins, and says so), and the lines saying where each came
    from."""
    values = {**reading.inputs}
    said = [f"{k} = {v!r} (from the file)" for k, v in values.items()]
    if reading.format in KIND_OF_FORMAT and "kind" not in flags:
        values["kind"] = KIND_OF_FORMAT[reading.format]
        said.append(
            f"kind = {values['kind']!r} (assumed for a {reading.format} run; --workload says otherwise)"
        )
    if reading.format in STACK_OF_FORMAT and "stack" not in flags and "stack" not in values:
        values["stack"] = STACK_OF_FORMAT[reading.format]
        said.append(
            f"stack = {values['stack']!r} (assumed for a {reading.format} run; --stack says otherwise)"
        )
    for key, value in flags.items():
        if key == "profile":
            continue
        if key in values and values[key] != value:
            said.append(f"{key} = {value!r} (--{key.replace('_', '-')}, over the file's {values[key]!r})")
        elif key not in values:
            said.append(f"{key} = {value!r} (from {flag_of(key)})")
        values[key] = value
    _model_of(knowledge, values)
    return values, said


_LOAD = {"concurrency", "batch_size", "requests_per_s", "num_prompts"}


def _missing(values: dict[str, Any], reading: Reading) -> None:
    """One line naming the first input the run cannot be read or predicted without."""
    if "_unknown_model" in values and not ({"model", "params", "spec"} & values.keys()):
        raise InputError(
            field="model",
            value=values["_unknown_model"],
            problem="(named by the file) is not in the catalogue; nothing was stored",
            accepted="give the model: a catalogue id (gpu-advisor models lists them), a size or a config",
        )
    needed = [("gpu", "the GPU the run used"), ("count", "how many GPUs it used")]
    if not ({"model", "params", "spec"} & values.keys()):
        needed.append(("model", "the model it trained or served"))
    for name, why in (*needed, *reading.needs):
        if name == "concurrency" and _LOAD & values.keys():
            continue  # a serving load given any way: requests in flight, a static batch or a rate
        if name not in values:
            raise InputError(
                field=name,
                value=None,
                problem=f"is not said by {shown(reading.source)} ({why}); nothing was stored",
                accepted="give it",
            )


def measured_of(reading: Reading, values: dict[str, Any], seq_len: int) -> dict[str, float]:
    """What the run measured in predict's units: training items/s over all GPUs; serving as read."""
    got = reading.measured
    if reading.kind == "serving":
        return dict(got)
    if "throughput" in got:
        return {"throughput": got["throughput"]}
    if "tokens_per_s_per_gpu" in got:
        return {"throughput": got["tokens_per_s_per_gpu"] * values["count"]}
    if "samples_per_s" in got:
        return {"throughput": got["samples_per_s"] * seq_len}
    if "samples_per_s_per_gpu" in got:
        return {"throughput": got["samples_per_s_per_gpu"] * seq_len * values["count"]}
    return {"throughput": values["global_batch"] * seq_len / got["step_s"]}


def ready(knowledge: Knowledge, reading: Reading, flags: dict[str, Any]) -> ReadyRun:
    """A reading merged with the flags and checked: InputError (one line) names what is missing."""
    from advisor.job.resolve import resolve_job

    values, said = merged(knowledge, reading, flags)
    _missing(values, reading)
    work = {k: v for k, v in values.items() if k in _WORKLOAD_KEYS}
    config = {k: v for k, v in values.items() if k in _CONFIG_KEYS}
    if config:
        work["config"] = config
    if "spec" in values:
        work["spec"] = values["spec"]
    workload = question(Workload, work)
    job = resolve_job(knowledge, workload, need_data=False)
    key = (job.config.engine or "vllm") if not job.training else job.stack
    gpu = knowledge.gpu(values["gpu"]).id
    measured = measured_of(reading, values, job.seq_len)
    return ReadyRun(reading, workload, gpu, int(values["count"]), key, measured, tuple(said))


def predicted(knowledge: Knowledge, run: ReadyRun, model: EfficiencyModel) -> Prediction:
    """predict for exactly the run's configuration (what `gpu-advisor predict` with its flags gives)."""
    return predict(knowledge, run.workload, run.gpu, run.count, Constraints(), model)


_PINNED = ("tp", "pp", "cp", "ep", "zero", "recompute", "global_batch", "pp_schedule", "stack", "engine")


def pinned(run: ReadyRun, pred: Prediction) -> tuple[ReadyRun, tuple[str, ...]]:
    """The run with every configuration value of the plan predict chose for it held (the file and flags
    said some; predict chose the rest): the exact configuration its figures are stored for, and the values
    added, as 'name value'."""
    config = dict(run.workload.config.given())
    work = dump(run.workload, exclude_none=True, exclude_defaults=True)
    added = []
    for key in _PINNED:
        cv = pred.configuration.get(key)
        if cv is None or key in config or cv.value is None:
            continue
        if (key == "pp_schedule" and cv.value == "1f1b") or (key == "stack" and cv.value not in STACKS):
            continue  # the default schedule, and the eager-PyTorch default no --stack names, stay unsaid
        config[key] = cv.value
        added.append(f"{key} {cv.value}")
    micro = pred.configuration.get("micro_batch")
    if run.reading.kind == "training" and micro is not None and run.workload.batch_size is None:
        work["batch_size"] = micro.value
        added.append(f"micro_batch {micro.value}")
    work["config"] = config
    return ReadyRun(
        run.reading, question(Workload, work), run.gpu, run.count, run.key, run.measured, run.said
    ), tuple(added)


def figures(pred: Prediction, kind: str) -> dict[str, float]:
    """A prediction's figures under the names runs measure them by."""
    if pred.throughput is None:
        return {}
    if kind == "training":
        return {"throughput": pred.throughput.value}
    out = {"output_tok_s": pred.throughput.value}
    if pred.serving_ttft_ms is not None:
        out["ttft_ms"] = pred.serving_ttft_ms.p50
    if pred.serving_tpot_ms is not None:
        out["tpot_ms"] = pred.serving_tpot_ms.p50
    load = pred.serving_load
    if load is not None:  # a result file's means are compared with the simulated requests' means
        out["mean_ttft_ms"] = load.ttft_ms.mean
        out["mean_tpot_ms"] = load.tpot_ms.mean
    return out


def point_of(run: ReadyRun, pred: Prediction, knowledge: Knowledge) -> dict[str, float]:
    """The configuration of the plan predict chose for the run (its stated values and the rest chosen)."""
    from advisor.job.resolve import resolve_job

    job = resolve_job(knowledge, run.workload, need_data=False)
    if job.training:
        at = training_point(
            params=job.params,
            seq_len=job.seq_len,
            kind=job.kind,
            precision=pred.precision,
            count=run.count,
            layout=pred.layout,
        )
        return {**at, **prediction_shares(pred)}
    w = run.workload
    closed = w.batch_size or w.concurrency
    load = closed or w.requests_per_s or 1.0
    return {
        **serving_point(
            params=job.params,
            count=run.count,
            tp=pred.layout.tp,
            load=load,
            prompt=job.prompt_tokens,
            output=job.output_tokens,
            precision=pred.precision,
        ),
        "rate": 1.0 if w.requests_per_s and not closed else 0.0,
    }


def prediction_shares(pred: Prediction) -> dict[str, float]:
    """The parts of a prediction's step the calibration moves apart (its composed breakdown without the
    learned residual); none for a step not composed from operations (all compute)."""
    b, step = pred.step_breakdown, pred.step_time_s
    if b is None or step is None:
        return {}
    return step_shares([(p.op, p.seconds) for p in b.parts if p.op != RESIDUAL], step.p50)


def simulated(
    knowledge: Knowledge,
    where: tuple[Workload, str, int],
    base: EfficiencyModel,
    log_factors: Sequence[float],
) -> dict[str, float]:
    """A serving deployment's figures at its load with the engine's efficiencies moved by the multipliers
    (empty when predict refuses it)."""
    from advisor.learned.calibration.serving_profile import ServingTrial

    workload, gpu, count = where
    try:
        got = predict(knowledge, workload, gpu, count, Constraints(), ServingTrial(base, log_factors))
    except InputError:
        return {}
    return figures(got, "serving")


def where_of(run: StoredRun) -> tuple[Workload, str, int]:
    """A stored run's workload, GPU and count, as predict takes them."""
    return question(Workload, run.workload), run.gpu, run.count


def serving_group_fit(
    knowledge: Knowledge, runs: Sequence[StoredRun], base: EfficiencyModel, base_model: str
) -> ServingFit | None:
    """The multipliers on the engine's efficiencies fitted jointly on results of one GPU and engine, each
    simulated exactly at its deployment and load (advisor/learned/calibration/serving.py), with each run's
    figures at them; None when the simulation gives no figure for one of them."""
    from advisor.learned.calibration.serving import fit, fit_name

    wheres = [where_of(r) for r in runs]
    results = [
        (lambda theta, w=w: simulated(knowledge, w, base, theta), r.measured)
        for w, r in zip(wheres, runs, strict=True)
    ]
    found = fit(results)
    if found is None:
        return None
    return ServingFit(
        base_model=fit_name(base_model),
        runs=[r.id for r in runs],
        mean=list(found.mean),
        precision=[list(row) for row in found.precision],
        fitted={r.id: simulated(knowledge, w, base, found.mean) for w, r in zip(wheres, runs, strict=True)},
    )


def stored(
    run: ReadyRun, pred: Prediction, base_model: str, knowledge: Knowledge, trusted: bool
) -> StoredRun:
    """The record kept in the profile."""
    payload = {
        "gpu": run.gpu,
        "count": run.count,
        "key": run.key,
        "workload": dump(run.workload, mode="json", exclude_none=True, exclude_defaults=True),
        "measured": run.measured,
        "format": run.reading.format,
    }
    digest = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]
    return StoredRun(
        id=digest,
        kind=run.reading.kind,
        format=run.reading.format,
        source=run.reading.source[:500],
        added=dt.date.today().isoformat(),
        gpu=run.gpu,
        count=run.count,
        key=run.key,
        version=run.workload.stack_version,
        workload=payload["workload"],
        measured=run.measured,
        base=figures(pred, run.reading.kind),
        base_model=base_model,
        point=point_of(run, pred, knowledge),
        trusted_far=trusted,
    )


def far_metric(run: StoredRun, limit: float) -> tuple[str, float] | None:
    """The first metric measured more than limit (in log) from the base prediction, with the ratio."""
    for metric, value in run.measured.items():
        base = run.base.get(metric)
        # Time to first token under load is the serving model's weakest figure: flagged only past 3x.
        bound = max(limit, math.log(3.0)) if metric == "ttft_ms" else limit
        if base and value > 0 and abs(math.log(value / base)) > bound:
            return metric, value / base
    return None
