"""Provides the wizard's form: its fields (from the core's field registry), which apply, reading typed text,
and the Workload and Constraints the core validates.

Every word, bound and parser comes from `advisor.question.fields`, so the wizard accepts and refuses exactly
what the command line and `--from` files do; every check beyond a field's own is the core's, shown beside
the field it names. Pydantic and the models load only when there is a question to validate, not for the
first frame.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from advisor.question.errors import InputError
from advisor.question.fields import FIELDS, label_of, serving_load

if TYPE_CHECKING:
    from advisor.catalog import Knowledge
    from advisor.catalog.models import ModelSpec
    from advisor.job.inputs import Constraints, Workload

Values = Mapping[str, Any]
"""Raw field values by field id: text for inputs, the chosen value for selects, tuples for multi-selects."""

STEP_TITLES = ("Workload", "Model", "Budget & constraints")

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
    "fused_loss",
    "lora_rank",
    "lora_targets",
    "stack",
    "engine",
    "headroom",
)
"""The model step's collapsed Advanced section, in the order shown."""

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
        *serving_load(),
        *ADVANCED_FIELDS,
    ),
    (
        "budget_usd",
        "budget_period",
        "deadline_hours",
        "deployment",
        "pricing",
        "objective",
        "max_gpus",
        "providers",
        "gpus",
    ),
)
"""The fields of each step, in the order shown."""

WIZARD_FIELDS = frozenset(name for step in STEP_FIELDS for name in step)

CHOICES: dict[str, tuple[str, ...]] = {
    name: ("auto", *FIELDS[name].choices) if FIELDS[name].auto else FIELDS[name].choices
    for name in WIZARD_FIELDS
    if FIELDS[name].kind in ("choice", "switch") and name not in ("kind",)
}
"""The choices of each select; 'auto' leaves the value to the search (or the model's default)."""

DEFAULTS: dict[str, Any] = {
    **dict.fromkeys(WIZARD_FIELDS, ""),
    **{name: choices[0] for name, choices in CHOICES.items()},
    "providers": (),
    "gpus": (),
}
"""Every field's value before the user touches it (the models' own defaults)."""

LABELS: dict[str, str] = {name: FIELDS[name].label for name in WIZARD_FIELDS}
"""Each field's label: the UI names inputs by these, never by the command line's flags."""

WORKLOAD_PARTS = ("workload", "config")
WORKLOAD_FIELDS = frozenset(n for n in WIZARD_FIELDS if FIELDS[n].part in WORKLOAD_PARTS)
TRAINING_ONLY = frozenset(n for n in WIZARD_FIELDS if "inference" not in FIELDS[n].applies_to)
INFERENCE_ONLY = frozenset(n for n in WIZARD_FIELDS if FIELDS[n].applies_to == {"inference"})

FORM = "form"
"""The key of a message about the whole form that belongs to no one field (shown in the wizard's status)."""


def label(field_name: str) -> str:
    """The UI's name for an input."""
    return label_of(field_name)


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
    """The fields the chosen workload kind, deployment and model use (the registry says which)."""
    kind = values.get("kind") or None
    deployment = values.get("deployment") or None
    transformer = spec is None or spec.is_transformer
    names = {
        n
        for n in WIZARD_FIELDS
        if FIELDS[n].applies(kind, deployment) and (transformer or FIELDS[n].needs != "transformer")
    }
    if kind != "inference":  # the data of a training job is counted in the model's own unit
        names.discard("samples" if counts_tokens(spec) else "tokens")
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
    """Each field's text read by the registry's parser, as the command line reads the same text."""
    data: dict[str, Any] = {}
    for name in names:
        raw = values.get(name)
        if raw is None or raw == "" or raw == ():
            continue
        try:
            value = FIELDS[name].parse(raw)
        except InputError as exc:
            _place(exc, errors, name)
            continue
        if value is not None:  # blank or 'auto': left to the search
            data[name] = value
    return data


def _validate(model: type[Any], data: dict[str, Any], errors: dict[str, str]) -> Any:
    """The validated question part, or None with the core's messages put beside their fields."""
    from advisor.job.door import question, validation_errors

    try:
        return question(model, data)
    except InputError as exc:
        _place(exc, errors)  # the core's check, saying which input it is about
        return None
    except ValueError as exc:
        found = validation_errors(exc)
        if found is None:
            raise
        for err in found:
            cause = (err.get("ctx") or {}).get("error")
            if isinstance(cause, InputError):
                _place(cause, errors)  # the core's check, saying which input it is about
                continue
            msg = str(err["msg"]).removeprefix("Value error, ")
            path = [str(x) for x in err["loc"]]
            loc = (path[1] if path[0] == "config" and len(path) > 1 else path[0]) if path else FORM
            errors.setdefault(loc, msg)
        return None


def _model_error(knowledge: Knowledge | None, name: str) -> str | None:
    """Why the model field does not name a catalogue model (the core's nearest ids where it has some)."""
    if knowledge is None:
        return "loading the catalogue..."
    try:
        knowledge.model(name)
    except InputError as exc:
        close = exc.accepted if exc.accepted and exc.accepted.startswith("did you mean") else None
        return f"unknown model {name!r}; " + (close or "pick one from the list")
    return None


def check(values: Values, knowledge: Knowledge | None) -> Checked:
    """Parse and validate every applicable field; build the Workload and Constraints when they are valid."""
    errors: dict[str, str] = {}
    name = str(values.get("model") or "").strip()
    spec = catalogue_model(knowledge, name)
    applicable = applicable_fields(values, spec)
    if not values.get("kind"):
        errors["kind"] = "choose what you want to do"
    if name and spec is None:
        errors["model"] = _model_error(knowledge, name) or ""
    data = _parse(values, applicable, errors)
    if spec is not None:
        data["model"] = spec.id
    config = {k: data.pop(k) for k in list(data) if FIELDS[k].part == "config"}
    if config:
        data["config"] = config
    workload = _workload(data, errors, knowledge)
    constraints = None
    if workload is not None and not any(k in STEP_FIELDS[2] for k in errors):
        constraint_data = {k: v for k, v in data.items() if k not in WORKLOAD_FIELDS and k != "config"}
        constraints = _validate(_models().Constraints, constraint_data, errors)
    return Checked(workload, constraints, errors, applicable)


def _models() -> Any:
    """The core's input models, imported on the first question (not for the first frame)."""
    from advisor.job import inputs

    return inputs


def _workload(data: dict[str, Any], errors: dict[str, str], knowledge: Knowledge | None) -> Workload | None:
    """The Workload, checked by the core's own resolution too (what the fields alone cannot tell)."""
    if any(k in WORKLOAD_FIELDS or k == FORM for k in errors):
        return None
    workload = _validate(
        _models().Workload, {k: v for k, v in data.items() if k in WORKLOAD_FIELDS or k == "config"}, errors
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
    from advisor.question.records import dump

    update = {"budget_usd": data.get("budget_usd"), "deadline_hours": data.get("deadline_hours")}
    result = _validate(_models().Constraints, {**dump(constraints), **update}, errors)
    return result, errors
