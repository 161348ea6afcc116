"""The one way to declare a record: frozen, slotted standard-library dataclasses, validated by pydantic at the
doors only (advisor/question/records.py, advisor/job/door.py), dumped as pydantic's model_dump gave them."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

import pytest
from pydantic import ValidationError

from advisor.catalog.assumptions import Figure, Prior
from advisor.catalog.common import Source, decode_object, encode
from advisor.job.door import input_names, question, validation_errors
from advisor.job.inputs import Constraints, RunConfig, Workload, stated
from advisor.question.errors import InputError
from advisor.question.records import Check, PosFloat, dump, validate

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True, slots=True, kw_only=True)
class _Inner:
    """A record held by another."""

    x: float
    when: dt.date | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class _Outer:
    """A record of records, a tuple, a dict and a field made after construction."""

    name: Annotated[str, Check(min_length=2)]
    rate: PosFloat = 1.0
    inner: tuple[_Inner, ...] = ()
    table: dict[str, _Inner] = field(default_factory=dict)
    made: int = field(default=0, init=False)
    note: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "made", len(self.inner))
        if self.name == "no":
            raise ValueError("name: 'no' is refused")


def test_records_are_frozen_slotted_dataclasses() -> None:
    """No second mechanism is left: the old bases and decorators are gone from the core and the UI."""
    old = re.compile(
        r"\bvalue_type\b|class Frozen\b|\(Record\)|\(Strict\)|\(BaseModel\)|model_validate|model_dump"
    )
    found = [
        f"{p.relative_to(ROOT)}:{n}"
        for folder in ("advisor", "tui")
        for p in sorted((ROOT / folder).rglob("*.py"))
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if old.search(line) and "pydantic's model_dump" not in line
    ]
    assert not found, found
    for kind in (Workload, Constraints, RunConfig, Source, Figure):
        assert dataclasses.is_dataclass(kind) and "__slots__" in kind.__dict__
        assert kind.__dataclass_params__.frozen  # type: ignore[attr-defined]
    with pytest.raises(dataclasses.FrozenInstanceError):
        Constraints().top = 3  # type: ignore[misc]


def test_dump_is_model_dump() -> None:
    rec = _Outer(
        name="ab", rate=2, inner=(_Inner(x=1, when=dt.date(2025, 1, 2)),), table={"k": _Inner(x=0.5)}
    )
    assert dump(rec) == {
        "name": "ab",
        "rate": 2.0,  # a whole number in a float field, as validation would hold it
        "inner": ({"x": 1.0, "when": dt.date(2025, 1, 2)},),
        "table": {"k": {"x": 0.5, "when": None}},
    }  # `made` (init=False) and `note` (not part of the value) are not dumped
    assert type(dump(rec)["rate"]) is float
    assert dump(rec, mode="json")["inner"] == [{"x": 1.0, "when": "2025-01-02"}]
    assert dump(rec, exclude_none=True)["table"] == {"k": {"x": 0.5}}
    assert dump(rec, exclude_defaults=True, exclude_none=True) == {
        "name": "ab",
        "rate": 2.0,
        "inner": ({"x": 1.0, "when": dt.date(2025, 1, 2)},),
        "table": {"k": {"x": 0.5}},
    }
    json.dumps(dump(rec, mode="json"))


def test_validate_refuses_in_pydantics_words() -> None:
    good = validate(_Outer, {"name": "ab", "inner": [{"x": "1.5"}]})
    assert good.inner == (_Inner(x=1.5),) and good.made == 1
    cases = {
        "extra_forbidden": {"name": "ab", "colour": 1},
        "missing": {"rate": 1.0},
        "string_too_short": {"name": "a"},
        "greater_than": {"name": "ab", "rate": 0},
        "value_error": {"name": "no"},
    }
    for kind, data in cases.items():
        with pytest.raises(ValidationError) as caught:
            validate(_Outer, data)
        assert caught.value.errors()[0]["type"] == kind, data
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        validate(_Outer, {"name": "ab", "inner": [{"x": 1, "y": 2}]})  # a nested record refuses too


def test_the_knowledge_cache_codec_round_trips_and_names_only_core_records() -> None:
    data = {
        "a": Source(title="abc", ref="xyz", date=dt.date(2024, 5, 1)),
        "b": (Prior(p10=0.1, p50=0.2, p90=0.3, source="s"),),
    }
    again = json.loads(json.dumps(encode(data)), object_hook=decode_object)
    assert again == data and type(again["b"]) is tuple
    for tag in ("os:system", "builtins:dict", "advisor.catalog.common:normalise_id"):
        with pytest.raises(KeyError):
            decode_object({"~r": tag})


def test_the_door_builds_typed_values_without_pydantic() -> None:
    """What the registry types (flags, the wizard) is built at once: no pydantic import for it."""
    code = (
        "import sys\n"
        "from advisor.job.door import question\n"
        "from advisor.job.inputs import Constraints, Workload\n"
        "w = question(Workload, {'model': 'm', 'seq_len': '4k', 'epochs': 2, 'config': {'tp': '2'}})\n"
        "c = question(Constraints, {'budget_usd': '20k', 'providers': 'aws,gcp'})\n"
        "assert w.seq_len == 4000 and w.epochs == 2.0 and w.config.tp == 2, w\n"
        "assert c.budget_usd == 20000.0 and c.providers == ('aws', 'gcp'), c\n"
        "assert 'pydantic' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_the_door_records_what_was_given_and_refuses_in_the_registrys_words() -> None:
    w = question(Workload, {"model": "llama-2-7b", "optimizer": "adamw", "seq_len": "auto"})
    assert w.given == {"model", "optimizer"}  # 'auto' leaves the length to the search
    assert stated(w) == {"model", "optimizer"} and stated(Workload(model="x", epochs=3)) == {
        "model",
        "epochs",
    }
    assert w == Workload(model="llama-2-7b")  # given-ness is not part of the value
    assert "given" not in dump(w) and "given" not in input_names(Workload)
    with pytest.raises(InputError, match="seq_len: '-5' must be at least 1"):
        question(Workload, {"model": "llama-2-7b", "seq_len": "-5"})
    with pytest.raises(InputError, match="is not an input"):
        question(Workload, {"model": "llama-2-7b", "given": ["model"]})
    with pytest.raises(InputError, match="exactly one of"):  # the part's own check, from __post_init__
        question(Workload, {"model": "llama-2-7b", "params": "7B"})
    for bad in ({"model": 5}, {"model": "x", "colour": "red"}, {"model": "x", "config": {"colour": 1}}):
        with pytest.raises(ValidationError) as caught:
            question(Workload, bad)
        errors = validation_errors(caught.value)
        assert errors is not None, bad
        assert errors[0]["msg"] in ("Input should be a valid string", "Extra inputs are not permitted"), (
            errors
        )


def test_sections_of_figures_hold_figures_and_refuse_unknown_keys() -> None:
    """A knowledge file's section that is only a table of sourced figures (assumptions.toml's, tco.toml's) is
    a typing.TypedDict of Figure (a dict whose keys mypy checks), validated at the door by
    catalog/common.Figures: exactly its keys, each a Figure, an unknown key refused."""
    import typing

    from advisor.catalog import assumptions, tco
    from advisor.catalog.assumptions import NetworkFigures
    from advisor.catalog.common import FIGURES

    declared = re.compile(r"^class (\w+)\((?:TypedDict|_\w+Optional)\b", re.M)
    for module in (assumptions, tco):
        names = declared.findall(Path(module.__file__ or "").read_text(encoding="utf-8"))
        assert len(names) >= 9, module.__name__
        for name in names:
            hints = typing.get_type_hints(getattr(module, name))
            assert hints and set(hints.values()) == {Figure}, f"{module.__name__}.{name}"
    figure = {"value": 1.0, "unit": "x", "source": "s"}
    kind = Annotated[NetworkFigures, FIGURES]
    assert validate(kind, {"pod_gpus": figure, "oversubscription": figure})["pod_gpus"] == Figure(**figure)
    with pytest.raises(ValidationError, match="Extra inputs"):
        validate(kind, {"pod_gpus": figure, "oversubscription": figure, "colour": figure})
    with pytest.raises(ValidationError, match="Field required"):
        validate(kind, {"pod_gpus": figure})


def test_core_records_compile_no_repr() -> None:
    """Python 3.11's dataclasses compiles every generated method from source when a record is declared, and
    a command declares all the records of the modules it imports: the core's records take repr=False (no
    command prints one), so `predict` and `recommend` do not pay for a method they never call. The fleet
    simulator's records are left as they are (its JSON falls back to str() of a value)."""
    decorator = re.compile(r"^\s*@(dataclasses\.)?dataclass\b(\((?P<args>.*)\))?\s*$")
    missing = [
        f"{p.relative_to(ROOT)}:{n}"
        for p in sorted((ROOT / "advisor").rglob("*.py"))
        if "fleet" not in p.relative_to(ROOT).parts
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if (m := decorator.match(line)) and "repr=False" not in (m["args"] or "")
    ]
    assert not missing, missing
    # What the flag changes, and what it leaves: a record still compares by value unless declared eq=False.
    from advisor.job.layout import Layout

    one = Layout(count=8, nodes=1, node_size=8, precision="bf16")
    assert one == Layout(count=8, nodes=1, node_size=8, precision="bf16")
    assert repr(one).startswith("<advisor.job.layout.Layout object at")
