"""Provides `gpu-advisor fleet plan FILE.toml|validate`: the fleet parser (no core imports) and runner."""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

# dataclasses and json are imported where they are used: every `--help` builds this module's parser.


def add_fleet_parser(sub: argparse._SubParsersAction) -> None:
    """`fleet plan PORTFOLIO.toml` and `fleet validate [--trace DIR]`."""
    p = sub.add_parser(
        "fleet",
        help="size, simulate and price a cluster for a portfolio of jobs",
        description="Plan a cluster for a team's whole portfolio (TOML): each GPU type and count, a training "
        "core + inference edge mix, simulated with the guide's four queues, power cap and failures; KPIs "
        "against the guide's targets, cost per owner, on-prem against cloud, staged purchase.",
    )
    fsub = p.add_subparsers(dest="fleet_command", metavar="ACTION")
    plan = fsub.add_parser(
        "plan",
        help="size and simulate a portfolio",
        description="Example: gpu-advisor fleet plan examples/lab-portfolio.toml",
    )
    plan.add_argument("portfolio", nargs="?", help="portfolio TOML (see examples/lab-portfolio.toml)")
    plan.add_argument("--from", dest="from_file", metavar="PLAN.toml", help="re-run an exported fleet plan")
    plan.add_argument("--weeks", help="weeks to simulate (default: the portfolio's, else 52)")
    plan.add_argument("--replications", help="seeded replications (default: the portfolio's, else 20)")
    plan.add_argument("--prior", action="store_true", help="use the efficiency priors, not the learned model")
    plan.add_argument(
        "--format", choices=("table", "json", "toml"), default=None, help="default table, or -o's .toml/.json"
    )
    plan.add_argument("-o", "--output", metavar="FILE", help="write to FILE atomically instead of printing")
    plan.add_argument("--force", action="store_true", help="let -o replace an existing file")
    val = fsub.add_parser(
        "validate",
        help="the simulator against Erlang C, priority M/M/1 and a production trace",
        description="Erlang C and pre-emptive priority M/M/1 errors of long simulated runs, and the replay "
        "of "
        "Alibaba's cluster-trace-gpu-v2023 (from --trace DIR, else the recorded result).",
    )
    val.add_argument("--trace", metavar="DIR", help="folder of cluster-trace-gpu-v2023's CSV files")
    val.add_argument(
        "--hours",
        help="simulated hours of each closed-form run (default 100,000 for M/M/4 and 300,000 for the "
        "priority queue; shorter runs give larger errors)",
    )
    val.add_argument("--format", choices=("table", "json"), default=None, help="default table")


def _count(value: str | None, what: str, lo: int, hi: int) -> int | None:
    from advisor.question.errors import InputError

    if value is None:
        return None
    try:
        n = float(value)
    except ValueError:
        n = math.nan
    if not (lo <= n <= hi) or n != int(n):
        raise InputError(f"{what} {value!r}: accepted a whole number from {lo} to {hi}")
    return int(n)


def run_fleet(args: argparse.Namespace) -> int:
    """Run `fleet plan` or `fleet validate`."""
    if args.fleet_command == "validate":
        return _validate(args)
    if args.fleet_command != "plan":
        print("gpu-advisor fleet: error: give an action: plan or validate", file=sys.stderr)
        return 2
    return _plan(args)


def _portfolio(args: argparse.Namespace, knowledge: Any) -> Any:
    import dataclasses

    from advisor.fleet.portfolio import load_portfolio
    from advisor.question.errors import InputError

    path = args.from_file or args.portfolio
    if path is None:
        raise InputError(
            "fleet plan: give a portfolio file (e.g. examples/lab-portfolio.toml) or --from PLAN.toml"
        )
    try:
        portfolio = load_portfolio(path, knowledge)
    except InputError as exc:
        # The message already names the entry and field; the CLI's flag naming of structured errors would
        # misname them as flags.
        raise InputError(str(exc)) from None
    changes: dict[str, Any] = {}
    weeks = _count(args.weeks, "--weeks", 1, 520)
    reps = _count(args.replications, "--replications", 2, 200)
    if weeks is not None:
        changes["weeks"] = float(weeks)
    if reps is not None:
        changes["replications"] = reps
    if changes:
        portfolio = dataclasses.replace(portfolio, sizing=dataclasses.replace(portfolio.sizing, **changes))
    return portfolio


def _plan(args: argparse.Namespace) -> int:
    import json

    from advisor.catalog import load_knowledge
    from advisor.cli.output import emit, output_format
    from advisor.fleet.export import clean, fleet_toml
    from advisor.fleet.plan import plan_fleet
    from advisor.learned.efficiency.select import efficiency_model

    fmt = output_format(args.format, args.output)
    knowledge = load_knowledge()
    portfolio = _portfolio(args, knowledge)
    model = efficiency_model(knowledge, prior=bool(args.prior))
    plan = plan_fleet(knowledge, portfolio, model)
    if fmt == "json":
        text = json.dumps(clean(plan.plain()), indent=2, allow_nan=False, default=str)
    elif fmt == "toml":
        text = fleet_toml(plan)
    else:
        from advisor.cli.fleet_text import render_plan

        text = render_plan(plan)
    emit(text, args.output, args.force)
    return 0


def _validate(args: argparse.Namespace) -> int:
    import json

    from advisor.fleet.validation import validate
    from advisor.question.records import dump

    hours = _count(args.hours, "--hours", 100, 10_000_000)
    result = validate(args.trace) if hours is None else validate(args.trace, float(hours), float(hours))
    if (args.format or "table") == "json":
        print(json.dumps(dump(result, mode="json"), indent=2))
        return 0
    from advisor.cli.fleet_text import render_validation

    print(render_validation(result))
    return 0
