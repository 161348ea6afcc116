"""Each fact is stated once: a second copy of it anywhere in advisor/ fails here."""

from __future__ import annotations

import dataclasses
import re
import typing
from pathlib import Path

from advisor.fleet.portfolio import Entry
from advisor.job.inputs import Constraints, RunConfig, Workload
from advisor.ops.tco import TcoInputs
from advisor.question.fields import DEFAULT_MAX_GPUS, FIELDS, default_of, limits
from advisor.question.records import Check

ADVISOR = Path(__file__).resolve().parents[2] / "advisor"
DEFAULT_LINE = f"DEFAULT_MAX_GPUS = {DEFAULT_MAX_GPUS}"


def test_the_default_gpu_limit_is_stated_once() -> None:
    """The registry's DEFAULT_MAX_GPUS is the one number: the CLI's help, the wizard's placeholder, the
    core's Constraints and the fleet planner's search all read it."""
    number = re.compile(rf"\b{DEFAULT_MAX_GPUS}\b|{DEFAULT_MAX_GPUS:_}")
    copies = [
        f"{path.relative_to(ADVISOR)}:{n}: {line.strip()}"
        for path in sorted(ADVISOR.rglob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search("max_gpus", line, re.IGNORECASE) and number.search(line) and line.strip() != DEFAULT_LINE
    ]
    assert not copies, copies
    assert Constraints().max_gpus == DEFAULT_MAX_GPUS
    assert FIELDS["max_gpus"].default == str(DEFAULT_MAX_GPUS)
    assert str(DEFAULT_MAX_GPUS) in FIELDS["max_gpus"].placeholder


def _bounds_of(entry_field: str) -> dict[str, float]:
    """The bounds the field's Check markers give pydantic at the portfolio's door."""
    hint = typing.get_type_hints(Entry, include_extras=True)[entry_field]
    inner = next(a for a in typing.get_args(hint) if typing.get_origin(a) is typing.Annotated)
    out = {}
    for meta in inner.__metadata__:
        if isinstance(meta, Check):
            out.update({k: v for k, v in meta.keys.items() if k in ("gt", "ge", "lt", "le")})
    return out


def test_the_fleet_planner_holds_the_registrys_bounds() -> None:
    """A portfolio entry's rate, deadline and GPUs are the registry's fields, so they take its ranges, not
    ranges of their own."""
    for entry_field, registry_field in (
        ("requests_per_s", "requests_per_s"),
        ("deadline_hours", "deadline_hours"),
        ("gpus", "max_gpus"),
    ):
        assert _bounds_of(entry_field) == dict(limits(registry_field)), entry_field


def test_what_the_user_gave_is_read_from_the_job() -> None:
    """Whether an input was given is the job's given_workload (from the workload's door), never worked out
    again from the prose of the assumptions (which says what was assumed, for the reader)."""
    # A test of given-ness scans the notes in a boolean context (any/all of them, or the set of their
    # fields); replacing one note by another (a filter) is not such a test.
    scan = re.compile(
        r"\b(any|all)\(.*\.field\s*(==|!=|in\b).*\bassumed\b"
        r"|\{\s*\w+\.field\s+for\s+\w+\s+in\s+[\w.]*\bassumed\b"
    )
    copies = [
        f"{path.relative_to(ADVISOR)}:{n}: {line.strip()}"
        for path in sorted(ADVISOR.rglob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if scan.search(line)
    ]
    assert not copies, copies


QUESTION_PARTS = (Workload, RunConfig, Constraints, TcoInputs)
# Defaults resolved from knowledge/assumptions.toml (the record holds None): the registry's text shows them.
FROM_ASSUMPTIONS = {
    "lora_rank": ("defaults", "lora_rank"),
    "prompt_tokens": ("defaults", "prompt_tokens"),
    "output_tokens": ("defaults", "output_tokens"),
    "tpot_ms": ("defaults", "tpot_target_ms"),
    "headroom": ("memory", "headroom"),
}


def _registry_default(name: str) -> object:
    try:
        return default_of(name)
    except ValueError:
        return None  # a default said in words ("auto: bf16 where the GPU has it"), not a value


def test_the_questions_defaults_are_the_registrys() -> None:
    """Each default of the workload, configuration, constraints and ownership question is the registry's
    (read through default_of), never a literal of its own: a second copy in advisor/job/inputs.py or
    advisor/ops/tco.py fails here."""
    declared = re.compile(r"^    (\w+): [^=]+= (.+?)(\s+#.*)?$")
    for kind in QUESTION_PARTS:
        for f in dataclasses.fields(kind):
            value = _registry_default(f.name) if f.name in FIELDS else None
            if value is not None and f.default is not None:
                assert f.default == value and type(f.default) is type(value), f"{kind.__name__}.{f.name}"
    text = "\n".join((ADVISOR / name).read_text(encoding="utf-8") for name in ("job/inputs.py", "ops/tco.py"))
    copies = [
        line.strip()
        for line in text.splitlines()
        if (m := declared.match(line))
        and m.group(1) in FIELDS
        and _registry_default(m.group(1)) is not None
        and not m.group(2).startswith(("default_of(", "DEFAULT_MAX_GPUS", "None"))
    ]
    assert not copies, copies


def test_the_registry_shows_the_defaults_assumptions_toml_holds(knowledge) -> None:
    """Where the default lives in knowledge/assumptions.toml (the record holds None), the registry's text
    shows that figure, and the core reads the file's, not a number of its own."""
    for name, (section, key) in FROM_ASSUMPTIONS.items():
        figure = getattr(knowledge.assumptions, section)[key].value
        assert default_of(name) == figure, name
        assert all(
            f.default is None for kind in QUESTION_PARTS for f in dataclasses.fields(kind) if f.name == name
        )
