"""Provides the wizard's form: which fields apply, parsing typed text, Workload/Constraints via pydantic."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from advisor.job.config_check import TRAINING_ONLY as CONFIG_TRAINING_ONLY
from advisor.job.inputs import TRAINING_PRECISIONS, Constraints, RunConfig, Workload
from advisor.question.checks import checked
from advisor.question.errors import InputError
from advisor.question.units import parse_count, parse_hours
from advisor.question.vocab import ENGINES, LORA_TARGETS, OFFLOADS, OPTIMIZERS, RECOMPUTES, STACKS
from tui.presets import KINDS

if TYPE_CHECKING:
    from advisor.catalog import Knowledge
    from advisor.catalog.models import ModelSpec

Values = Mapping[str, Any]
"""Raw field values by field id: text for inputs, the chosen value for selects, tuples for multi-selects."""

STEP_TITLES = ("Workload", "Model", "Budget & constraints")

CONFIG_FIELDS: tuple[str, ...] = tuple(RunConfig.model_fields)
"""The Advanced fields that make up the run's configuration (advisor.job.inputs.RunConfig)."""

ADVANCED_FIELDS: tuple[str, ...] = (
    "tp",
    "pp",
    "cp",
    "ep",
    "dp",
    "zero",
    "shard_group",
    "recompute",
    "batch_size",
    "global_batch",
    "global_batch_tokens",
    "pp_schedule",
    "optimizer",
    "master_weights",
    "offload",
    "lora_rank",
    "lora_targets",
    "stack",
    "engine",
    "headroom",
)
"""The model step's collapsed Advanced section, in the order shown."""

CHOICES: dict[str, tuple[str, ...]] = {
    "zero": ("auto", "0", "1", "2", "3"),
    "recompute": ("auto", *RECOMPUTES),
    "optimizer": ("auto", *OPTIMIZERS),
    "master_weights": ("auto", "on", "off"),
    "offload": ("auto", *OFFLOADS),
    "lora_targets": ("auto", *LORA_TARGETS),
    "stack": ("auto", *STACKS),
    "engine": ("auto", *ENGINES),
}
"""The Advanced choices; 'auto' leaves the value to the search (or the model's default)."""

STEP_FIELDS: tuple[tuple[str, ...], ...] = (
    ("kind",),
    (
        "model",
        "params",
        "precision",
        "seq_len",
        "tokens",
        "samples",
        "epochs",
        "requests_per_s",
        "prompt_tokens",
        "output_tokens",
        "tpot_ms",
        "ttft_ms",
        *ADVANCED_FIELDS,
    ),
    (
        "budget_usd",
        "budget_period",
        "deadline_hours",
        "deployment",
        "pricing",
        "providers",
        "gpus",
        "objective",
    ),
)

DEFAULTS: dict[str, Any] = {
    **{name: "" for step in STEP_FIELDS for name in step},
    "precision": "auto",
    "budget_period": "job",
    "deployment": "cloud",
    "pricing": "on-demand",
    "objective": "balanced",
    "providers": (),
    "gpus": (),
    **dict.fromkeys(CHOICES, "auto"),
}
"""Every field's value before the user touches it (the models' own defaults)."""

WORKLOAD_FIELDS = frozenset(STEP_FIELDS[0] + STEP_FIELDS[1]) - {"headroom"}
TRAINING_ONLY = frozenset(
    {
        "tokens",
        "samples",
        "epochs",
        "deadline_hours",
        "batch_size",
        "optimizer",
        "lora_rank",
        "lora_targets",
        *CONFIG_TRAINING_ONLY,  # the configuration's own, as the core checks them
    }
)
INFERENCE_ONLY = frozenset(
    {"requests_per_s", "prompt_tokens", "output_tokens", "tpot_ms", "ttft_ms", "engine"}
)
LORA_ONLY = frozenset({"lora_rank", "lora_targets"})
SPLITS_TRANSFORMER = frozenset({"tp", "pp", "cp", "ep", "pp_schedule"})


def _count(text: str, name: str) -> float:
    # The core's parser with the field's own bounds (whole numbers, upper limits) from advisor.question.units.
    return parse_count(text, name, field=name)


def _whole(text: str, name: str) -> int:
    return int(_count(text, name))


def _hours(text: str, name: str) -> float:
    return parse_hours(text, name, field=name)


def _bounded(text: str, name: str) -> float | int:
    # '8', '1k' or '2M' read as on the command line, then held to the core's range for the input (BOUNDS).
    return checked(name, parse_count(text, name, field=name), name, given=text)


def _fraction(text: str, name: str) -> float | int:
    # Headroom as a fraction (0.1) or a percentage (10%).
    if text.endswith("%"):
        return checked(name, parse_count(text[:-1], name, field=name) / 100, name, given=text)
    return checked(name, parse_count(text, name, positive=False, field=name), name, given=text)


def _choice(text: str, name: str) -> Any:
    if name == "zero":
        return int(text)
    if name == "master_weights":
        return text == "on"
    return text


# How each free-text field is read: the core's own parsers, so '20k', '1.5T' and '3d' mean what they mean
# on the command line.
PARSERS: dict[str, Callable[[str, str], Any]] = {
    "params": _count,
    "seq_len": _whole,
    "tokens": _count,
    "samples": _count,
    "epochs": _count,
    "requests_per_s": _count,
    "prompt_tokens": _whole,
    "output_tokens": _whole,
    "tpot_ms": _count,
    "ttft_ms": _count,
    "budget_usd": _count,
    "deadline_hours": _hours,
    **dict.fromkeys(
        (
            "tp",
            "pp",
            "cp",
            "ep",
            "dp",
            "shard_group",
            "batch_size",
            "global_batch",
            "global_batch_tokens",
            "lora_rank",
        ),
        _bounded,
    ),
    "headroom": _fraction,
    **dict.fromkeys(CHOICES, _choice),
}

LABELS: dict[str, str] = {
    "kind": "Workload",
    "model": "Model",
    "params": "Custom size",
    "precision": "Precision",
    "seq_len": "Sequence length",
    "tokens": "Training tokens",
    "samples": "Samples",
    "epochs": "Epochs",
    "requests_per_s": "Requests/s",
    "prompt_tokens": "Prompt tokens",
    "output_tokens": "Output tokens",
    "tpot_ms": "Per-token target",
    "ttft_ms": "First-token target",
    "budget_usd": "Budget (USD)",
    "budget_period": "Budget per",
    "deadline_hours": "Deadline",
    "deployment": "Deployment",
    "pricing": "Pricing plan",
    "providers": "Providers",
    "gpus": "GPUs",
    "objective": "Optimise for",
    "tp": "Tensor parallel",
    "pp": "Pipeline parallel",
    "cp": "Context parallel",
    "ep": "Expert parallel",
    "dp": "Data parallel",
    "zero": "ZeRO stage",
    "shard_group": "Shard group",
    "recompute": "Recompute",
    "batch_size": "Micro-batch",
    "global_batch": "Global batch",
    "global_batch_tokens": "Global batch tokens",
    "pp_schedule": "Pipeline schedule",
    "optimizer": "Optimizer",
    "master_weights": "Master weights",
    "offload": "Offload",
    "lora_rank": "LoRA rank",
    "lora_targets": "LoRA targets",
    "stack": "Training stack",
    "engine": "Serving engine",
    "headroom": "Memory headroom",
}
"""Each field's label: the UI names inputs by these, never by the command line's flags."""

FORM = "form"
"""The key of a message about the whole form that belongs to no one field (shown in the wizard's status)."""


def label(field_name: str) -> str:
    """The UI's name for an input (the field id itself for one the wizard does not show)."""
    return LABELS.get(field_name, field_name.replace("_", " "))


@dataclass(frozen=True)
class Checked:
    """The outcome of checking the whole form."""

    workload: Workload | None
    constraints: Constraints | None
    errors: dict[str, str] = field(default_factory=dict)
    """Message by field id."""
    applicable: frozenset[str] = frozenset()
    """The fields that apply to the chosen workload and model (the others are hidden and ignored)."""

    def step_valid(self, step: int) -> bool:
        """Whether every field of a step (and the models it completes) is valid."""
        if any(name in self.errors for name in STEP_FIELDS[step]):
            return False
        if step == 1:
            return self.workload is not None
        if step == 2:
            return self.constraints is not None and self.workload is not None
        return True


def catalogue_model(knowledge: Knowledge | None, name: str) -> ModelSpec | None:
    """The catalogue model a name resolves to, or None (unknown or not loaded yet)."""
    if knowledge is None or not name.strip():
        return None
    try:
        return knowledge.model(name.strip())
    except InputError:
        return None


def counts_tokens(spec: ModelSpec | None) -> bool:
    """Whether a model's training data is counted in tokens (LLMs and custom sizes) or in samples."""
    return spec is None or spec.kind == "llm"


def applicable_fields(values: Values, spec: ModelSpec | None) -> frozenset[str]:
    """The fields the chosen workload kind and model use."""
    names = set(STEP_FIELDS[0] + STEP_FIELDS[1] + STEP_FIELDS[2])
    inference = values.get("kind") == "inference"
    names -= TRAINING_ONLY if inference else INFERENCE_ONLY
    if not inference:
        names.discard("samples" if counts_tokens(spec) else "tokens")
    if spec is not None and not spec.is_transformer:
        names.discard("seq_len")  # CNNs and the like have no sequence length to set
    if values.get("deployment") == "on-prem":
        names -= {"pricing", "providers"}
    if values.get("kind") not in ("lora", "qlora"):
        names -= LORA_ONLY
    if spec is not None and not spec.is_transformer:
        names -= SPLITS_TRANSFORMER  # data parallel only
    return frozenset(names)


def _place(exc: InputError, errors: dict[str, str], fallback: str = FORM) -> None:
    """Put a core message beside the field it names; one with no field goes to the form as a whole."""
    if exc.structured and exc.field in LABELS:
        errors.setdefault(exc.field, exc.detail())
    elif exc.structured:
        errors.setdefault(fallback, exc.phrase(label))
    else:
        errors.setdefault(fallback, str(exc))


def _parse(values: Values, names: frozenset[str], errors: dict[str, str]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for name in names:
        raw = values.get(name)
        if raw is None or raw == "" or raw == () or (name in CHOICES and raw == "auto"):
            continue
        parser = PARSERS.get(name)
        if parser is None:
            data[name] = raw
            continue
        try:
            data[name] = parser(str(raw), name)
        except InputError as exc:
            _place(exc, errors, name)
    return data


def _validate(model: type[BaseModel], data: dict[str, Any], errors: dict[str, str]) -> Any:
    """The validated model, or None with pydantic's messages put beside their fields."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        for err in exc.errors():
            cause = (err.get("ctx") or {}).get("error")
            if isinstance(cause, InputError):
                _place(cause, errors)  # a model-level check that says which input it is about
                continue
            msg = str(err["msg"]).removeprefix("Value error, ")
            path = [str(x) for x in err["loc"]]
            loc = (path[1] if path[0] == "config" and len(path) > 1 else path[0]) if path else FORM
            errors.setdefault(loc, msg)
        return None


def _own_checks(
    values: Values,
    data: dict[str, Any],
    spec: ModelSpec | None,
    applicable: frozenset[str],
    errors: dict[str, str],
) -> None:
    """What the wizard can tell from its own fields, in its own words, before asking the core."""
    kind = values.get("kind")
    model, params = str(values.get("model") or "").strip(), str(values.get("params") or "").strip()
    if model and params:
        errors.setdefault("params", "give a catalogue model or a custom size, not both")
    elif not model and not params and kind:
        errors.setdefault("model", "pick a model from the list, or give a custom size below")
    precision = values.get("precision")
    if kind and kind != "inference" and precision in ("int8", "int4"):
        errors.setdefault(
            "precision",
            f"{precision} is for inference; training takes {', '.join(TRAINING_PRECISIONS)}"
            " (QLoRA's 4-bit base comes with the QLoRA workload)",
        )
    if spec is not None and not spec.is_transformer and kind in ("lora", "qlora", "inference"):
        title = next((t for k, t, _ in KINDS if k == kind), kind)
        errors.setdefault(
            "kind",
            f"{title} needs a transformer; {spec.name} is a {spec.kind} "
            "(choose Pre-training or Full fine-tuning)",
        )
    if "samples" in applicable and spec is not None and not str(values.get("samples") or "").strip():
        errors.setdefault("samples", f"how many {spec.item or 'sample'}s per epoch, e.g. 200k")
    context = spec.max_seq_len if spec is not None else None
    prompt, output = data.get("prompt_tokens"), data.get("output_tokens")
    if kind == "inference" and context and prompt and output and prompt + output > context:
        errors.setdefault(
            "output_tokens",
            f"prompt + output = {prompt + output} tokens, past {spec.name}'s context of {context}",
        )


def check(values: Values, knowledge: Knowledge | None) -> Checked:
    """Parse and validate every applicable field; build the Workload and Constraints when they are valid."""
    errors: dict[str, str] = {}
    name = str(values.get("model") or "").strip()
    spec = catalogue_model(knowledge, name)
    applicable = applicable_fields(values, spec)
    if not values.get("kind"):
        errors["kind"] = "choose what you want to do"
    if name and knowledge is None:
        errors["model"] = "loading the catalogue..."
    elif name and spec is None:
        errors["model"] = f"unknown model {name!r}; pick one from the list"
    data = _parse(values, applicable, errors)
    _own_checks(values, data, spec, applicable, errors)
    if spec is not None:
        data["model"] = spec.id
    config = {k: data.pop(k) for k in CONFIG_FIELDS if k in data}
    if config:
        data["config"] = config
    workload = _workload(data, errors, knowledge)
    constraint_data = {
        k: tuple(v) if isinstance(v, (list, tuple)) else v
        for k, v in data.items()
        if k not in WORKLOAD_FIELDS and k != "config"
    }
    blocked = any(k in STEP_FIELDS[2] for k in errors)
    constraints = None if blocked else _validate(Constraints, constraint_data, errors)
    return Checked(workload, constraints, errors, applicable)


def _workload(data: dict[str, Any], errors: dict[str, str], knowledge: Knowledge | None) -> Workload | None:
    """The Workload, checked by the core's own resolution too (what the fields alone cannot tell)."""
    if any(k in WORKLOAD_FIELDS or k == FORM for k in errors):
        return None
    workload = _validate(
        Workload, {k: v for k, v in data.items() if k in WORKLOAD_FIELDS or k == "config"}, errors
    )
    if workload is None or knowledge is None:
        return workload
    from advisor.job.config_check import check_config
    from advisor.job.resolve import resolve_job

    try:
        check_config(resolve_job(knowledge, workload))  # the clashes a stated configuration can have
    except InputError as exc:
        _place(exc, errors)
        return None
    return workload


def adjust_constraints(
    constraints: Constraints, budget: str, deadline: str
) -> tuple[Constraints | None, dict[str, str]]:
    """The constraints with a new budget and deadline (blank = none), or None with the message per field."""
    errors: dict[str, str] = {}
    data = _parse(
        {"budget_usd": budget, "deadline_hours": deadline},
        frozenset({"budget_usd", "deadline_hours"}),
        errors,
    )
    if errors:
        return None, errors
    update = {"budget_usd": data.get("budget_usd"), "deadline_hours": data.get("deadline_hours")}
    result = _validate(Constraints, {**constraints.model_dump(), **update}, errors)
    return result, errors
