"""Provides the TOML export: one self-describing record of inputs, assumptions, plans, rules and advice."""

from __future__ import annotations

import datetime as dt
from typing import Any

from advisor import __version__
from advisor.answer.report import Report
from advisor.catalog.common import drop_none
from advisor.catalog.loader import Knowledge
from advisor.job.inputs import stated
from advisor.question.records import dump


def _source_ref(knowledge: Knowledge, key: str) -> str:
    """A price source's citation, or its key where the knowledge has no such source."""
    source = knowledge.source(key)
    return source.ref if source else key


def export_record(
    report: Report, knowledge: Knowledge, generated_at: dt.datetime | None = None
) -> dict[str, Any]:
    """The exported record as a dict (what export_toml writes)."""
    when = (generated_at or dt.datetime.now(dt.UTC)).replace(microsecond=0)
    data = dump(report)
    w = report.workload
    plans = data["plans"]
    given = {k: v for k, v in dump(w, exclude_none=True).items() if k in stated(w)}
    if w.config.stack_named is not None and isinstance(given.get("config"), dict):
        # The stack as the user named it, so that a re-run says again what it is answered as.
        given["config"] = {**given["config"], "stack": w.config.stack_named}
    a = knowledge.assumptions
    record = {
        "schema_version": report.schema_version,
        "generated_at": when,
        "tool": {"name": "gpu-advisor", "version": __version__},
        "inputs": {
            # What the user gave, and only that: a re-run marks the same values given (the rest stay
            # defaults).
            "workload": given,
            "constraints": dump(report.constraints, exclude_none=True),
        },
        "assumptions": {
            "prices_as_of": report.prices_as_of,
            "price_sources": {key: _source_ref(knowledge, key) for key in report.price_sources},
            "catalogue_version": report.catalogue_version,
            "efficiency_source": report.efficiency_source,
            "memory_headroom": report.constraints.headroom
            if report.constraints.headroom is not None
            else a.memory["headroom"].value,
            "job": data["job"],
        },
        "chosen": plans[0] if plans else None,
        "alternatives": plans[1:],
        "front": data["front"],
        "rules_fired": sorted(
            {r["id"] for p in plans for r in p["rules"]} | {r.id for r in report.job_advice}
        ),
        "advice": list(
            dict.fromkeys(
                [a for p in plans[:1] for a in p["advice"]]
                + [r.message for r in report.job_advice if r.kind == "advice"]
            )
        ),
        "why_not": list(report.why_not),
        "nothing_fits": report.nothing_fits,
        "suggestions": data["suggestions"],
        "notes": data["notes"],
        "operations": data.get("operations"),
        "launch": data.get("launch"),
        "tco": data.get("tco"),
    }
    return drop_none(record)


def export_toml(report: Report, knowledge: Knowledge, generated_at: dt.datetime | None = None) -> str:
    """The record as TOML text."""
    import tomli_w  # only TOML output needs the writer

    return tomli_w.dumps(export_record(report, knowledge, generated_at))
