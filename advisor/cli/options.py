"""Provides the CLI's options as derived from the field registry: one flag per field, its choices and help
(with the default stated), and the values the user gave, read by the registry's parsers."""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from advisor.question.fields import FIELDS, Field

ALSO = {"batch_size": ("--batch-size",)}
"""Older spellings of a flag, still read (--batch-size: the micro-batch of training, the static batch each
replica runs for inference)."""
_METAVAR = {"number": "N", "duration": "HOURS", "fraction": "F", "text": "ID", "path": "PATH", "list": "A,B"}


class _Spelled(argparse.Action):
    """Stores the value and the spelling of the flag the user typed (args.spelled: dest -> flag), so that a
    refusal names the flag typed and an older spelling can keep its own meaning."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        setattr(namespace, self.dest, values)
        namespace.spelled = {**(getattr(namespace, "spelled", None) or {}), self.dest: option_string}


def _metavar(f: Field) -> str | None:
    if f.metavar:
        return f.metavar
    if f.kind == "choice" and len(",".join(f.choices)) <= 20:
        return "{" + ",".join(f.choices) + "}"
    if f.kind == "choice":
        return f.flag.removeprefix("--").split("-")[0].upper()
    return _METAVAR.get(f.kind)


def _help(f: Field, text: str | None, default: str | None) -> str:
    """The help line: the field's words (or the command's), the choices when the metavar cannot show them,
    and the default."""
    text = text or f.help
    shown = (_metavar(f) or "").startswith("{") or all(c in text for c in f.choices)
    if f.kind == "choice" and not shown:
        text += ": " + ", ".join(f.choices)
    default = f.default if default is None else default
    return (f"{text} (default {default})" if default else text).replace("%", "%%")


def add_fields(
    group: argparse._ActionsContainer,
    names: Iterable[str],
    *,
    helps: Mapping[str, str] | None = None,
    required: Iterable[str] = (),
    defaults: Mapping[str, str] | None = None,
) -> None:
    """One option per registry field, under its flag; helps overrides a field's help for one command."""
    helps, defaults, required = helps or {}, defaults or {}, set(required)
    for name in names:
        f = FIELDS[name]
        kwargs: dict[str, Any] = {"dest": name, "help": _help(f, helps.get(name), defaults.get(name))}
        if f.kind == "switch":  # only the non-default can be said on the command line: --no-master-weights
            kwargs.update(action="store_const", const=False)
        else:
            kwargs.update(metavar=_metavar(f), required=name in required, default=defaults.get(name))
            if name in ALSO:
                kwargs["action"] = _Spelled
        group.add_argument(f.flag, *ALSO.get(name, ()), **kwargs)


def read_fields(args: argparse.Namespace) -> dict[str, Any]:
    """The registry fields the user gave, each read by its parser (a structured InputError for a bad one;
    blank or 'auto' where the field allows it is left out, as if not given)."""
    out: dict[str, Any] = {}
    for name, raw in vars(args).items():
        f = FIELDS.get(name)
        if f is None or raw is None:
            continue
        value = f.parse(raw)
        if value is not None:
            out[name] = value
    return out


def values_of(values: Mapping[str, Any], part: str) -> dict[str, Any]:
    """The given values that fill one part (workload, config, constraints, spec, tco, cost)."""
    return {k: v for k, v in values.items() if FIELDS[k].part == part}
