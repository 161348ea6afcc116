"""Provides dispatch(): turns parsed arguments into core calls and renders their results."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor.catalog import Knowledge, load_knowledge
from advisor.cli import render
from advisor.cli.guards import check_applicable
from advisor.cli.options import values_of
from advisor.cli.output import json_text, output_format
from advisor.cli.validated import validated as _validated
from advisor.question.errors import InputError
from advisor.question.fields import flag_of
from advisor.question.records import dump

if TYPE_CHECKING:
    from advisor.answer.report import Report
    from advisor.catalog.models import ModelSpec
    from advisor.cli.writes import Target
    from advisor.learned.efficiency.base import EfficiencyModel
    from advisor.ops.launch import LaunchArtefacts


def _values(args: argparse.Namespace) -> dict[str, Any]:
    return getattr(args, "values", {})


def workload_fields(args: argparse.Namespace) -> dict[str, Any]:
    """The workload flags the user gave (absent ones are left out so defaults or --from apply)."""
    fields = values_of(_values(args), "workload")
    config = values_of(_values(args), "config")
    if config:
        fields["config"] = config
    spec = model_spec_fields(args)
    if spec is not None:
        fields["spec"] = spec
    return fields


def model_spec_fields(args: argparse.Namespace) -> ModelSpec | None:
    """The model read from --config or built from --layers ... (None when neither is given), as
    Workload.spec: the record itself, which the door takes as it is (a dict would be judged by pydantic,
    imported for it alone; Workload checks the spec's sizes and shape either way)."""
    values = _values(args)
    shape = values_of(values, "spec")
    ways = [
        way
        for way, on in (
            ("--model", "model" in values),
            ("--params", "params" in values),
            ("--config", "config" in values),
            ("--layers/--hidden/...", bool(shape)),
        )
        if on
    ]
    if not shape and "config" not in values:
        return None
    if len(ways) > 1:
        raise InputError(
            f"give one of --model, --params, --config or a shape (--layers ...), not {' and '.join(ways)}"
        )
    if "config" in values:
        from advisor.catalog.hf_config import read_hf_config

        spec = read_hf_config(Path(values["config"]))
    else:
        from advisor.catalog.hf_config import spec_from_shape

        missing = [flag_of(k) for k in SHAPE_NEEDED if k not in shape]
        if missing:
            raise InputError(
                f"a model shape needs {', '.join(missing)} too (or give --model, --params or --config)"
            )
        ffn_type = shape.pop("ffn_type", "gated")
        spec = spec_from_shape(**shape, gated=ffn_type == "gated")
    return spec


SHAPE_NEEDED = ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab")


def constraint_fields(args: argparse.Namespace) -> dict[str, Any]:
    """The constraint flags the user gave."""
    return values_of(_values(args), "constraints")


def _efficiency(knowledge: Knowledge, args: argparse.Namespace, *, on_use: bool = False) -> EfficiencyModel:
    from advisor.learned.efficiency.select import efficiency_model, efficiency_model_on_use

    read = efficiency_model_on_use if on_use else efficiency_model
    return read(knowledge, prior=bool(getattr(args, "prior", False)))


def _catalogue(args: argparse.Namespace, rows: Sequence[Any], text: str) -> int:
    if (args.format or "table") == "json":
        print(json_text([dump(r, mode="json") for r in rows], indent=2))
    else:
        print(text)
    return 0


def cmd_gpus(args: argparse.Namespace) -> int:
    knowledge = load_knowledge()
    return _catalogue(args, knowledge.gpus, render.gpus_table(knowledge))


def cmd_models(args: argparse.Namespace) -> int:
    knowledge = load_knowledge()
    return _catalogue(args, knowledge.models, render.models_table(knowledge))


def cmd_prices(args: argparse.Namespace) -> int:
    from advisor.catalog.loader import all_offers
    from advisor.search.cost import offer_flags

    if getattr(args, "prices_command", None) == "update":
        from advisor.cli.prices_cli import update_cli

        return update_cli(args)
    knowledge = load_knowledge()
    offers = all_offers(knowledge)
    if args.gpu:
        gpu = knowledge.gpu(args.gpu)
        offers = [o for o in offers if o.gpu == gpu.id]
    if args.provider:
        providers = sorted({o.provider for o in all_offers(knowledge)})
        if args.provider.lower() not in providers:
            raise InputError(f"--provider {args.provider!r}: unknown; accepted: {', '.join(providers)}")
        offers = [o for o in offers if o.provider == args.provider.lower()]
    if args.pricing:
        offers = [o for o in offers if o.pricing.startswith(args.pricing)]
    max_age = _values(args).get("max_price_age_months", 12.0)
    flags = offer_flags(offers, max_age)
    if (args.format or "table") == "json":
        print(
            json_text(
                [
                    dump(o, mode="json") | {"usd_per_gpu_hour": o.usd_per_gpu_hour, "flags": flags[id(o)]}
                    for o in offers
                ],
                indent=2,
            )
        )
    else:
        print(render.prices_table(offers, flags, max_age))
    return 0


def cmd_predict(args: argparse.Namespace) -> int:
    from advisor.answer.predict import predict
    from advisor.job.inputs import Constraints, Workload

    knowledge = load_knowledge()
    workload = _validated(Workload, workload_fields(args))
    constraints = _validated(Constraints, constraint_fields(args))
    count = _values(args).get("count", 1)
    check_applicable(args, workload.kind)
    result = predict(
        knowledge, workload, _values(args)["gpu"], count, constraints, _efficiency(knowledge, args)
    )
    if (args.format or "table") == "json":
        print(json_text(dump(result, mode="json"), indent=2))
    else:
        print(render.prediction_text(result))
    return 0 if result.throughput is not None else 1


def _spec_inputs(path: str) -> tuple[dict[str, Any], dict[str, Any]]:
    from advisor.cli.spec_file import read_spec_file
    from advisor.question.fields import of_part

    workload, constraints = read_spec_file(path)
    config = workload.pop("config", {})
    if not isinstance(config, dict):
        raise InputError(f"--from {path}: [inputs.workload.config] must be a table of configuration keys")
    # Configuration keys are read under [inputs.workload.config] or, as the CLI flags, in [inputs.workload].
    config = {**{k: workload.pop(k) for k in list(workload) if k in of_part("config")}, **config}
    if config:
        workload["config"] = config
    return workload, constraints


def cmd_recommend(args: argparse.Namespace) -> int:
    from advisor.answer.export import export_toml
    from advisor.answer.recommend import recommend
    from advisor.job.inputs import Constraints, Workload

    knowledge = load_knowledge()
    base_w, base_c = _spec_inputs(args.from_file) if args.from_file else ({}, {})
    if getattr(args, "scenario", None):  # a named scenario's inputs, under the user's flags
        from advisor.answer.scenarios import scenario_inputs

        sw, sc = scenario_inputs(knowledge, args.scenario, _efficiency(knowledge, args))
        base_w = {**dump(sw, exclude_defaults=True), **base_w}
        base_c = {**dump(sc, exclude_defaults=True), **base_c}
    given_w = workload_fields(args)
    if given_w.keys() & {"model", "params", "spec"}:  # a new model replaces the file's
        for key in ("model", "params", "spec"):
            base_w.pop(key, None)
    if "config" in base_w and "config" in given_w:  # flags override the file's configuration key by key
        given_w["config"] = {**base_w["config"], **given_w["config"]}
    workload = _validated(Workload, {**base_w, **given_w})
    constraints = _validated(Constraints, {**base_c, **constraint_fields(args)})
    check_applicable(args, workload.kind, constraints.deployment)
    onprem = None
    if constraints.deployment == "on-prem":
        from advisor.cli.tco_args import onprem_overrides

        onprem = onprem_overrides(args)
    fmt = output_format(args.format, args.output)
    report = recommend(knowledge, workload, constraints, _efficiency(knowledge, args, on_use=True), onprem)
    if fmt == "json":
        text = json_text(report.plain(), indent=2)
    elif fmt == "toml":
        text = export_toml(report, knowledge)
    else:
        text = render.report_text(report)
    _write_recommendation(args, report, text, knowledge)
    return 1 if report.nothing_fits else 0


def _write_recommendation(
    args: argparse.Namespace, report: Report, text: str, knowledge: Knowledge | None = None
) -> None:
    """Print the answer, or write -o and --artefacts together: every file checked first, all written or
    none."""
    if not (args.output or args.artefacts or getattr(args, "benchmark_script", None)):
        print(text)  # nothing to write: the file writes' module is not imported
        return
    from advisor.cli.writes import Target, write_all

    targets = (
        [Target(Path(args.output).expanduser(), text if text.endswith("\n") else text + "\n", "-o")]
        if args.output
        else []
    )
    launch = report.launch
    if args.artefacts and launch is None:
        print(
            f"--artefacts {args.artefacts}: no plan fits, so there are no launch artefacts to write",
            file=sys.stderr,
        )
    elif args.artefacts and launch is not None:
        targets += artefact_targets(launch, Path(args.artefacts).expanduser())
    targets += _benchmark_targets(args, report, knowledge)
    write_all(targets, args.force)
    if not args.output:
        print(text)
    if args.output:
        print(f"wrote {targets[0].path}", file=sys.stderr)
    names = sorted(t.path.name for t in targets if t.flag == "--artefacts")
    if names:
        print(f"wrote {', '.join(names)} to {args.artefacts}", file=sys.stderr)
    bench = sorted(t.path.name for t in targets if t.flag == "--benchmark-script")
    if bench:
        print(f"wrote {', '.join(bench)} to {args.benchmark_script}", file=sys.stderr)


def _benchmark_targets(args: argparse.Namespace, report: Report, knowledge: Knowledge | None) -> list[Target]:
    """--benchmark-script DIR: the chosen plan's short benchmark run (benchmark.sh executable)."""
    folder = getattr(args, "benchmark_script", None)
    if not folder:
        return []
    if report.nothing_fits or not report.plans:
        print(f"--benchmark-script {folder}: no plan fits, so there is no run to write", file=sys.stderr)
        return []
    from advisor.answer.benchmark import benchmark_for
    from advisor.cli.writes import Target

    files = benchmark_for(knowledge or load_knowledge(), report)
    return [
        Target(Path(folder).expanduser() / name, text, "--benchmark-script", executable=name.endswith(".sh"))
        for name, text in files.items()
    ]


def artefact_targets(launch: LaunchArtefacts, folder: Path) -> list[Target]:
    """The chosen plan's launch artefacts as files to write into folder (launch.sh executable)."""
    from advisor.cli.writes import Target

    files = {
        launch.framework_config_name: launch.framework_config,
        "sky-task.yaml": launch.skypilot_task,
        "prometheus-rules.yaml": launch.prometheus_rules,
        "launch.sh": "#!/usr/bin/env bash\n" + (launch.serve or launch.torchrun) + "\n",
    }
    if launch.kubeflow_job:
        files["pytorchjob.yaml"] = launch.kubeflow_job
    return [
        Target(folder / name, text, "--artefacts", executable=name == "launch.sh")
        for name, text in files.items()
    ]


def cmd_checklist(args: argparse.Namespace) -> int:
    from advisor.answer.checklist import find_entries

    knowledge = load_knowledge()
    entries = find_entries(knowledge, args.error_type, args.search)
    if (args.format or "text") == "json":
        print(json_text([dump(e, mode="json") for e in entries], indent=2))
    else:
        print(render.checklist_text(entries, knowledge, full=bool(args.error_type or args.search)))
    return 0


def cmd_tco(args: argparse.Namespace) -> int:
    from advisor.cli.tco_args import tco_inputs
    from advisor.ops.tco import tco

    knowledge = load_knowledge()
    result = tco(knowledge, tco_inputs(args))
    if (args.format or "table") == "json":
        print(json_text(dump(result, mode="json"), indent=2))
    else:
        print(render.tco_text(result))
    return 0


def cmd_model(args: argparse.Namespace) -> int:
    if args.model_command == "train":
        from advisor.cli.evaluate_out import model_train

        return model_train(args)
    if args.model_command == "evaluate":
        from advisor.cli.evaluate_out import model_evaluate

        return model_evaluate(args)
    raise InputError("model: give an action: train or evaluate")


def cmd_calibrate(args: argparse.Namespace) -> int:
    from advisor.cli.calibrate_cli import calibrate_cli

    return calibrate_cli(args)


def cmd_probe(args: argparse.Namespace) -> int:
    from advisor.cli.probe_cli import probe_cli

    return probe_cli(args)


def cmd_cost(args: argparse.Namespace) -> int:
    from advisor.cli.guide_text import cost_cli

    return cost_cli(args)


COMMANDS = {
    "cost": cmd_cost,
    "gpus": cmd_gpus,
    "models": cmd_models,
    "prices": cmd_prices,
    "predict": cmd_predict,
    "recommend": cmd_recommend,
    "checklist": cmd_checklist,
    "tco": cmd_tco,
    "model": cmd_model,
    "calibrate": cmd_calibrate,
    "probe": cmd_probe,
}


def dispatch(args: argparse.Namespace) -> int:
    """Run the parsed command."""
    return COMMANDS[args.command](args)
