"""Provides `gpu-advisor calibrate`: reads run files, stores their runs in a profile, prints before and after
as predict gives them; --list, --reset, --export, --refresh and --dry-run."""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor.job.door import question
from advisor.question.checks import shown
from advisor.question.errors import InputError
from advisor.question.records import dump

if TYPE_CHECKING:
    from advisor.answer.calibration_runs import ReadyRun
    from advisor.answer.predict import Prediction
    from advisor.catalog.loader import Knowledge
    from advisor.catalog.run_store import StoredRun

MAX_FILE_BYTES = 64 << 20
LOO_MAX_SERVING = 6
"""Serving's leave-one-run-out refits the efficiencies once per result (each fit simulates every result
about a hundred times): shown up to this many results."""


def calibrate_cli(args: argparse.Namespace) -> int:
    """The calibrate command."""
    from advisor.catalog.run_store import check_profile_name

    values: dict[str, Any] = dict(getattr(args, "values", {}))
    profile = values.get("profile")
    if profile is not None:
        check_profile_name(profile)
    actions = [a for a in ("list", "reset", "export", "refresh") if getattr(args, a, None)]
    if len(actions) > 1 or (actions and args.file):
        raise InputError("--list, --reset, --export and --refresh take no FILE and not each other")
    if args.list:
        return _list(getattr(args, "format", None) or "table")
    if actions:
        if profile is None:
            raise InputError(
                f"--{actions[0]} needs --profile NAME (see them with gpu-advisor calibrate --list)"
            )
        _has_runs(profile)
        if args.refresh:
            from advisor.catalog import load_knowledge

            return _refresh(load_knowledge(), profile)
        return _reset(profile) if args.reset else _export(profile, args.export, args.force)
    if not args.file:
        from advisor.catalog.run_logs.detect import FORMATS

        raise InputError(f"give a run file ({FORMATS}), --list, or --reset/--export/--refresh --profile NAME")
    from advisor.catalog import load_knowledge

    return _calibrate(load_knowledge(), args, values)


def _has_runs(profile: str) -> None:
    """Refuse a profile with no runs (a mistyped name), naming the nearest and the ones that have runs."""
    from advisor.catalog.run_store import list_profiles, load_runs
    from advisor.question.fields import did_you_mean

    if load_runs(profile):
        return
    names = [n for n in list_profiles() if load_runs(n)]
    known = f"profiles with runs: {', '.join(names)}" if names else "no profile has runs yet"
    hint = did_you_mean(profile, names)
    raise InputError(f"profile {shown(profile)} has no calibration runs; {hint + ' ' if hint else ''}{known}")


def _list(fmt: str) -> int:
    from advisor.catalog.run_store import list_profiles, load_runs

    names = [n for n in list_profiles() if load_runs(n)]  # a file moved aside on reading leaves none
    if fmt == "json":
        from advisor.cli.output import json_text

        print(json_text({n: [dump(r, mode="json") for r in load_runs(n)] for n in names}, indent=2))
        return 0
    if not names:
        print("no calibration profiles yet; add runs with: gpu-advisor calibrate FILE")
        return 0
    from advisor.cli.output import table

    for name in names:
        runs = load_runs(name)
        print(f"profile {name}: {len(runs)} run(s)")
        cells = [
            (
                r.kind,
                r.format,
                r.gpu,
                r.count,
                r.key,
                r.workload.get("model", "?"),
                ", ".join(f"{k} {v:,.6g}" for k, v in r.measured.items()),
                ", ".join(f"{r.measured[k] / v:.2f}x" for k, v in r.base.items() if k in r.measured and v),
                shown(r.source).strip("'"),
            )
            for r in runs
        ]
        print(
            table(
                ("kind", "format", "gpu", "count", "stack", "model", "measured", "vs model", "source"),
                cells,
                right=(3,),
            )
        )
    return 0


def _reset(profile: str) -> int:
    from advisor.catalog.run_store import reset_profile

    removed = reset_profile(profile)
    print(f"removed the runs of profile {profile}" if removed else f"profile {profile} has no runs to remove")
    return 0


def _export(profile: str, path: str, force: bool) -> int:
    from advisor.catalog.run_store import profile_text
    from advisor.cli.writes import Target, write_all

    write_all([Target(Path(path).expanduser(), profile_text(profile), "--export")], force)
    print(f"wrote profile {profile} to {path}", file=sys.stderr)
    return 0


def _refresh(knowledge: Knowledge, profile: str) -> int:
    """Re-predict every run of a profile with the current uncalibrated model (after the model changed)."""
    from advisor.answer.calibration_runs import figures
    from advisor.answer.predict import predict
    from advisor.catalog.run_store import add_runs, load_runs
    from advisor.job.inputs import Workload
    from advisor.learned.efficiency.select import efficiency_model

    base = _uncalibrated(efficiency_model(knowledge))
    again = {}
    for run in load_runs(profile):
        pred = predict(knowledge, question(Workload, run.workload), run.gpu, run.count, None, base)
        name = _base_name(knowledge, run.kind, base)
        if pred.throughput is not None:
            again[run.id] = dataclasses.replace(run, base=figures(pred, run.kind), base_model=name)
    add_runs(profile, [], rebase=again)
    for gpu, engine in sorted({(r.gpu, r.key) for r in load_runs(profile) if r.kind == "serving"}):
        _refit_serving(knowledge, profile, gpu, engine, base)
    print(f"profile {profile}: re-predicted {len(again)} run(s) with the current model")
    return 0


def _readings(knowledge: Knowledge, files: list[str]) -> list[Any]:
    """Every run of every file; one line (exit 2) for the first file that is not a run file."""
    from advisor.catalog.run_logs import read_run_file
    from advisor.question.checks import read_input_text

    out = []
    for file in files:
        text = read_input_text(file, "calibrate", MAX_FILE_BYTES)
        name = Path(file).name
        if _is_runs_csv(text):
            out.extend(_csv_readings(knowledge, text, name))
        else:
            out.extend(read_run_file(text, name))
    return out


def _is_runs_csv(text: str) -> bool:
    from advisor.catalog.benchmarks import COLUMNS

    head = text.lstrip("\ufeff").split("\n", 1)[0]
    return (
        all(c in head.split(",") for c in ("workload", "gpu", "throughput"))
        and len(head.split(",")) >= len(COLUMNS) // 2
    )


def _csv_readings(knowledge: Knowledge, text: str, name: str) -> list[Any]:
    from advisor.catalog.run_logs import Reading
    from advisor.learned.efficiency.calibrate import validate_runs

    rows, configs, errors = validate_runs(knowledge, text, name)
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        raise InputError(
            f"{len(errors)} bad row(s) in {shown(name)}; nothing was stored. Fix them and run again"
        )
    if not rows:
        raise InputError(f"{shown(name)}: no rows; nothing was stored")
    out = []
    for i, (row, cfg) in enumerate(zip(rows, configs, strict=True), 2):
        inputs: dict[str, Any] = {
            "model": row.workload,
            "gpu": row.gpu,
            "count": row.count,
            "precision": row.precision,
            **cfg,
        }
        if row.seq_len:
            inputs["seq_len"] = row.seq_len
        if row.batch_per_gpu and float(row.batch_per_gpu).is_integer():
            inputs["batch_size"] = int(row.batch_per_gpu)
        out.append(
            Reading(
                "csv",
                "training",
                f"{name}:{i}",
                inputs,
                {"throughput": row.throughput},
                (f"row {i}: {row.throughput:,.6g} {row.unit} on {row.count} GPU(s)",),
            )
        )
    return out


def _calibrate(knowledge: Knowledge, args: argparse.Namespace, values: dict[str, Any]) -> int:
    from advisor.answer.calibration_runs import predicted, ready

    flags = {k: v for k, v in values.items() if k != "profile"}
    runs = [ready(knowledge, r, flags) for r in _readings(knowledge, args.file)]
    if args.dry_run:
        for run in runs:
            _show_read(run)
        print("dry run: nothing was stored")
        return 0
    from advisor.answer.calibration_runs import pinned
    from advisor.learned.efficiency.select import efficiency_model

    base = _uncalibrated(efficiency_model(knowledge))
    held, base_preds = [], []
    for run in runs:
        first = predicted(knowledge, run, base)
        if first.throughput is None:
            held.append(run)
            base_preds.append(first)
            continue
        run, added = pinned(run, first)  # the exact configuration the figures are stored for
        if added:
            print(f"{run.reading.source}: not in the file or flags, as predict chose: {', '.join(added)}")
        held.append(run)
        base_preds.append(predicted(knowledge, run, base))
    return _store_and_report(knowledge, held, base_preds, base, values.get("profile"), args)


def _uncalibrated(model: Any) -> Any:
    from advisor.learned.calibration.efficiency import CalibratedEfficiency

    return model.base if isinstance(model, CalibratedEfficiency) else model


def _show_read(run: ReadyRun) -> None:
    print(f"{run.reading.source}: {run.reading.format} ({run.reading.kind})")
    for line in (*run.reading.lines, *run.said):
        print(f"  {line}")
    for k, v in run.measured.items():
        print(f"  measured {k}: {v:,.6g}")


def _base_name(knowledge: Knowledge, kind: str, model: Any) -> str:
    if kind == "training":
        return str(model.name)
    from advisor.learned.calibration.serving_profile import serving_base_name

    return serving_base_name()


def _store_and_report(
    knowledge: Knowledge,
    runs: list[ReadyRun],
    preds: list[Prediction],
    base: Any,
    profile: str | None,
    args: argparse.Namespace,
) -> int:
    from advisor.answer.calibration_runs import far_metric, stored
    from advisor.catalog.run_store import add_runs, default_profile
    from advisor.learned.calibration.multiplier import FAR

    records: list[tuple[ReadyRun, StoredRun]] = []
    for run, pred in zip(runs, preds, strict=True):
        if pred.throughput is None:
            why = pred.notes[0] if pred.notes else pred.refusal
            raise InputError(
                f"{shown(run.reading.source)}: predict refuses this configuration ({why}); nothing stored"
            )
        name = _base_name(knowledge, run.reading.kind, base)
        rec = stored(run, pred, name, knowledge, bool(args.trust))
        far = far_metric(rec, FAR)
        if far and not args.trust:
            raise InputError(
                f"{shown(run.reading.source)}: measured {far[1]:.2f}x the model's {far[0]} for this "
                "configuration; is the GPU count, model or sequence right, or was a node throttled? Check "
                "it, then store it with --trust; nothing was stored"
            )
        records.append((run, rec))
    by_profile: dict[str, list[StoredRun]] = {}
    for run, rec in records:
        by_profile.setdefault(profile or default_profile(run.gpu, run.key), []).append(rec)
    for name, recs in by_profile.items():
        new, total = add_runs(name, recs)
        print(f"profile {name}: stored {new} new run(s), {total} in all")
        for gpu, engine in sorted({(r.gpu, r.key) for r in recs if r.kind == "serving"}):
            _refit_serving(knowledge, name, gpu, engine, base)
    return _after(knowledge, records, profile)


def _refit_serving(knowledge: Knowledge, profile: str, gpu: str, engine: str, base: Any) -> None:
    """Fit the engine's efficiencies on all of a profile's results on one GPU and engine, and keep it."""
    from advisor.answer.calibration_runs import serving_group_fit
    from advisor.catalog.run_store import store_serving_fit
    from advisor.learned.calibration.serving_profile import serving_base_name, serving_runs

    runs, _ = serving_runs(profile, gpu, engine)
    found = serving_group_fit(knowledge, runs, base, serving_base_name()) if runs else None
    store_serving_fit(profile, gpu, engine, found)
    if runs and found is None:
        print(f"profile {profile}: the {engine} results on {gpu} could not be simulated; not applied")


def _after(knowledge: Knowledge, records: list[tuple[ReadyRun, StoredRun]], profile: str | None) -> int:
    """Before and after, each figure exactly what predict now gives for the run's configuration."""
    from advisor.answer.calibration_runs import figures, predicted
    from advisor.learned.efficiency.select import efficiency_model

    model = efficiency_model(knowledge)
    for run, rec in records:
        if profile:  # the figure predict gives with --profile NAME: that profile's runs, not the default's
            run = dataclasses.replace(run, workload=dataclasses.replace(run.workload, profile=profile))
        pred = predicted(knowledge, run, model)
        after = figures(pred, rec.kind)
        print(f"{run.reading.source} ({run.gpu} x{run.count}, {rec.key}):")
        for metric, value in rec.measured.items():
            if metric not in rec.base or metric not in after:
                continue
            b, a = rec.base[metric], after[metric]
            print(
                f"  {metric}: measured {value:,.6g}; before {b:,.6g} ({b / value - 1:+.1%}); "
                f"after {a:,.6g} ({a / value - 1:+.1%})"
            )
        cal = [n for n in pred.notes if "calibrated on" in n]
        if cal:
            print(f"  {cal[0][cal[0].find('calibrated on') :] if rec.kind == 'training' else cal[0]}")
        print(f"  the same figure: gpu-advisor predict {_command(run, profile)}")
    _loo_report(records, profile)
    _serving_loo(knowledge, records, profile)
    return 0


def _command(run: ReadyRun, profile: str | None) -> str:
    """The predict flags of exactly the run's configuration."""
    from advisor.question.fields import flag_of

    work = dump(run.workload, exclude_none=True, exclude_defaults=True)
    config = work.pop("config", {})
    if work.get("kind") == "inference" and "batch_size" in work and "concurrency" not in work:
        # A result's requests in flight per replica: predict states them as the deployment's concurrency,
        # split evenly over its replicas (it takes no --micro-batch for inference).
        replicas = run.count // max(1, config.get("tp", 1) * config.get("pp", 1))
        work["concurrency"] = work.pop("batch_size") * max(1, replicas)
    parts = [f"--gpu {run.gpu}", f"--count {run.count}"]
    parts += [f"{flag_of('kind' if k == 'kind' else k)} {v}" for k, v in {**work, **config}.items()]
    if profile and "profile" not in work:
        parts.append(f"--profile {profile}")
    return " ".join(parts)


def _loo_report(records: list[tuple[ReadyRun, StoredRun]], profile: str | None) -> None:
    from advisor.catalog.run_store import default_profile, load_runs
    from advisor.learned.calibration.multiplier import SERVING_SCALES, TRAINING_SCALES, leave_one_out
    from advisor.learned.calibration.runs import SERVING_METRIC, log_ratio

    seen = set()
    for run, rec in records:
        name = profile or default_profile(run.gpu, run.key)
        if (name, rec.gpu, rec.key, rec.kind) in seen:
            continue
        seen.add((name, rec.gpu, rec.key, rec.kind))
        if rec.kind != "training":  # serving: _serving_loo, with the efficiencies refitted
            continue
        same = [
            r
            for r in load_runs(name)
            if r.gpu == rec.gpu and r.key == rec.key and r.kind == rec.kind and r.base_model == rec.base_model
        ]
        for metric in rec.measured:
            pairs = [(r.point, x) for r in same if (x := log_ratio(r, metric)) is not None]
            if len(pairs) < 2:
                continue
            scales = TRAINING_SCALES if rec.kind == "training" else SERVING_SCALES
            which = "training" if rec.kind == "training" else SERVING_METRIC[metric]
            errs = leave_one_out(pairs, which, scales)
            before = statistics.median(e for e, _ in errs)
            after = statistics.median(e for _, e in errs)
            print(
                f"leave-one-run-out over {len(pairs)} runs of profile {name} ({metric}): median error "
                f"before {before:.1%}, after {after:.1%}"
            )


def _serving_loo(
    knowledge: Knowledge, records: list[tuple[ReadyRun, StoredRun]], profile: str | None
) -> None:
    """With two or more serving results on a GPU and engine: each one simulated at the efficiencies fitted
    on the others, against its measured figures (before: the uncalibrated model's)."""
    from advisor.answer.calibration_runs import serving_group_fit, simulated, where_of
    from advisor.catalog.run_store import default_profile
    from advisor.learned.calibration.serving_profile import serving_base_name, serving_runs
    from advisor.learned.efficiency.select import efficiency_model

    base = _uncalibrated(efficiency_model(knowledge))
    seen = set()
    for run, rec in records:
        name = profile or default_profile(run.gpu, run.key)
        if rec.kind != "serving" or (name, rec.gpu, rec.key) in seen:
            continue
        seen.add((name, rec.gpu, rec.key))
        same = serving_runs(name, rec.gpu, rec.key)[0]
        if len(same) < 2:
            continue
        if len(same) > LOO_MAX_SERVING:
            print(f"leave-one-run-out not shown for {len(same)} results of profile {name}: each is a refit")
            continue
        errs: dict[str, list[tuple[float, float]]] = {}
        for i, r in enumerate(same):
            rest = serving_group_fit(
                knowledge, [o for j, o in enumerate(same) if j != i], base, serving_base_name()
            )
            got = simulated(knowledge, where_of(r), base, rest.mean) if rest is not None else {}
            for metric, value in r.measured.items():
                if got.get(metric) and r.base.get(metric):
                    pair = (abs(r.base[metric] / value - 1), abs(got[metric] / value - 1))
                    errs.setdefault(metric, []).append(pair)
        for metric, pairs in errs.items():
            before, after = statistics.median(b for b, _ in pairs), statistics.median(a for _, a in pairs)
            print(
                f"leave-one-run-out over {len(pairs)} runs of profile {name} ({metric}, each simulated at "
                f"the efficiencies fitted on the others): median error before {before:.1%}, after {after:.1%}"
            )
