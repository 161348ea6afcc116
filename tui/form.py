"""Provides the wizard's form: which fields apply, parsing typed text, Workload/Constraints via pydantic."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from advisor.errors import InputError
from advisor.inputs import Constraints, Workload
from advisor.units import parse_count, parse_hours

if TYPE_CHECKING:
    from advisor.catalog import Knowledge
    from advisor.catalog.models import ModelSpec

Values = Mapping[str, Any]
"""Raw field values by field id: text for inputs, the chosen value for selects, tuples for multi-selects."""

STEP_TITLES = ("Workload", "Model", "Budget & constraints")

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
}
"""Every field's value before the user touches it (the models' own defaults)."""

WORKLOAD_FIELDS = frozenset(STEP_FIELDS[0] + STEP_FIELDS[1])
TRAINING_ONLY = frozenset({"tokens", "samples", "epochs", "deadline_hours"})
INFERENCE_ONLY = frozenset({"requests_per_s", "prompt_tokens", "output_tokens", "tpot_ms", "ttft_ms"})


def _whole(text: str, what: str) -> int:
    number = parse_count(text, what)
    if number != int(number):
        raise InputError(f"{what}: {text!r} must be a whole number")
    return int(number)


def _count(text: str, what: str) -> float:
    return parse_count(text, what)


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
    "deadline_hours": parse_hours,
}

# Form-level pydantic errors (model validators) carry no field; the first of these words in the message
# names the field the message belongs beside.
_FORM_ERROR_FIELDS = (("precision", "precision"), ("tokens", "tokens"), ("model", "model"))


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
    return frozenset(names)


def _message(exc: InputError, what: str) -> str:
    """The core's one-line message without the field name it starts with (the label is beside it)."""
    return str(exc).removeprefix(f"{what}: ")


def _parse(values: Values, names: frozenset[str], errors: dict[str, str]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for name in names:
        raw = values.get(name)
        if raw is None or raw == "" or raw == ():
            continue
        parser = PARSERS.get(name)
        if parser is None:
            data[name] = raw
            continue
        try:
            data[name] = parser(str(raw), name)
        except InputError as exc:
            errors[name] = _message(exc, name)
    return data


def _validate(model: type[BaseModel], data: dict[str, Any], errors: dict[str, str], fallback: str) -> Any:
    """The validated model, or None with pydantic's messages put beside their fields."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        for err in exc.errors():
            msg = str(err["msg"]).removeprefix("Value error, ")
            loc = str(err["loc"][0]) if err["loc"] else ""
            if not loc:
                words = msg.split(" ", 2)[:2]
                loc = next((f for word, f in _FORM_ERROR_FIELDS if word in words), "")
                loc = loc or next((f for word, f in _FORM_ERROR_FIELDS if word in msg), fallback)
            errors.setdefault(loc, msg)
        return None


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
        assert knowledge is not None
        try:
            knowledge.model(name)
        except InputError as exc:
            errors["model"] = str(exc).split(";")[0] + "; pick one from the list"
    data = _parse(values, applicable, errors)
    if "samples" in applicable and spec is not None and "samples" not in data and "samples" not in errors:
        errors["samples"] = f"how many {spec.item or 'sample'}s per epoch, e.g. 200k"
    if spec is not None:
        data["model"] = spec.id
    workload_data = {k: v for k, v in data.items() if k in WORKLOAD_FIELDS}
    blocked = any(k in WORKLOAD_FIELDS for k in errors)
    workload = None if blocked else _validate(Workload, workload_data, errors, "model")
    if workload is not None and knowledge is not None:
        # The core's own resolution catches what the fields alone cannot (LoRA on a CNN, a missing data size).
        from advisor.job import resolve_job

        try:
            resolve_job(knowledge, workload)
        except InputError as exc:
            message = str(exc).replace("--workload ", "").replace("--samples N [--epochs E]", "samples x epochs")
            errors["samples" if "data size" in message else "kind"] = message
            workload = None
    constraint_data = {
        k: tuple(v) if isinstance(v, (list, tuple)) else v
        for k, v in data.items()
        if k not in WORKLOAD_FIELDS
    }
    blocked = any(k in STEP_FIELDS[2] for k in errors)
    constraints = None if blocked else _validate(Constraints, constraint_data, errors, "budget_usd")
    return Checked(workload, constraints, errors, applicable)


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
    result = _validate(Constraints, {**constraints.model_dump(), **update}, errors, "budget_usd")
    return result, errors
