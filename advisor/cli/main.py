"""Provides main(): the argument parser of every gpu-advisor command; heavy imports wait for the command."""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from advisor import __version__
from advisor.cli import AS_COMMAND, interrupted_while_starting, signal

# The parser and the field registry are imported by the functions that use them, inside the one-line error
# handling of main(): a Ctrl+C while they load is "interrupted", not a traceback.

USAGE = """gpu-advisor: which GPU, how many, on which plan, how long and at what cost, for one ML workload.

commands:
  (none)                           open the guided terminal UI
  recommend ...                    ranked plans for a workload (see recommend --help)
  predict ...                      throughput, memory and step time of one GPU x count
  checklist [TYPE]                 troubleshooting steps by error type
  tco ...                          total cost of owning GPUs, and buy versus rent
  cost ...                         the field guide's cost formula (--guide-example, --scenario)
  prices [update]                  cloud GPU prices; refresh them from SkyPilot-format catalogues
  gpus | models                    the catalogues
  model train|evaluate             the benchmark-trained efficiency model
  calibrate FILE                   calibrate on your own runs (CSV, training log, serving result)
  probe [--list]                   measure this node's GEMM, attention, bandwidth, collectives (torch)
  fleet plan FILE.toml|validate    size, simulate and price a cluster for a portfolio of jobs
  serve                            the guided UI in a web browser

Example: gpu-advisor recommend --model llama-2-70b --workload finetune --precision bf16 --budget 20000"""

RECOMMEND_EXAMPLES = """examples:
  gpu-advisor recommend --model llama-2-70b --workload finetune --budget 20k
  gpu-advisor recommend --model resnet50 --samples 200k --epochs 30 --deadline 72 --objective cheapest
  gpu-advisor recommend --model llama-3.1-8b --workload inference --requests-per-s 20 --tpot-ms 50
  gpu-advisor recommend --model llama-2-70b --workload qlora --max-gpus 1
  gpu-advisor recommend --from plan.toml --budget 5k     (an exported plan, one input changed)

Numbers take k, M, B, T (20k, 13B, 2T); a configuration value given (--tp 8) is held, the rest searched;
blank or auto leaves it to the search."""

SHAPE = (
    "layers",
    "hidden",
    "heads",
    "kv_heads",
    "head_dim",
    "ffn",
    "ffn_type",
    "vocab",
    "experts",
    "experts_per_token",
)
DATA = ("tokens", "samples", "epochs", "dataset_gb")
ONPREM = ("electricity_usd_kwh", "utilization", "years")


class Formatter(argparse.HelpFormatter):
    """Help with each option and its words on one line where the terminal allows; a description or epilog
    laid out in lines (the command list, the examples) is kept as written, a paragraph is wrapped."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=26, width=min(_columns(), 100))

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" in text:
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


def _columns() -> int:
    """The terminal's width as shutil.get_terminal_size() gives it ($COLUMNS, the terminal, else 80), without
    importing shutil (and the compression modules it loads): argparse makes a formatter per option."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit 2) instead of usage dumps, near-miss suggestions for a mistyped
    command or choice, and no abbreviations (--mod is not --model)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("formatter_class", Formatter)
        kwargs.setdefault("usage", "%(prog)s [options]")  # the options are listed below, grouped
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]  # argparse's own keyword arguments

    def error(self, message: str) -> NoReturn:
        """Print one line naming the bad value (and the nearest accepted one) and exit 2."""
        import re

        from advisor.question.fields import did_you_mean

        choice = re.search(r"invalid choice: '(.*)' \(choose from (.*)\)", message)
        if choice:
            hint = did_you_mean(choice.group(1), re.findall(r"'([^']*)'", choice.group(2)))
            message += f"; {hint}" if hint else ""
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(2)

    def option_strings(self) -> list[str]:
        """Every flag this command takes."""
        return [o for action in self._actions for o in action.option_strings]


def _workload_args(p: argparse.ArgumentParser, *, data: bool = False) -> None:
    from advisor.cli.options import add_fields
    from advisor.question.fields import of_part, serving_load

    add_fields(
        p.add_argument_group("workload"), ("kind", "model", "params", "config", "precision", "seq_len")
    )
    add_fields(p.add_argument_group("model shape (instead of --model: a Llama-style decoder)"), SHAPE)
    if data:
        add_fields(p.add_argument_group("training data"), DATA)
    add_fields(p.add_argument_group("serving load (--workload inference)"), serving_load())
    add_fields(
        p.add_argument_group("configuration (each value given is held; the rest is searched)"),
        ("batch_size", "optimizer", "lora_rank", *of_part("config")),
    )


def _format_arg(p: argparse._ActionsContainer, choices: Sequence[str], default: str) -> None:
    p.add_argument("--format", choices=choices, default=None, help=f"output format (default {default})")


def _output_args(p: argparse._ActionsContainer) -> None:
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE atomically instead of printing")
    p.add_argument("--force", action="store_true", help="let -o replace an existing file")


def _recommend_parser(sub: argparse._SubParsersAction) -> None:
    from advisor.cli.options import add_fields

    p = sub.add_parser(
        "recommend",
        help="ranked plans for a workload",
        description="Rank GPU x count x layout plans for a workload under a budget and deadline.",
        epilog=RECOMMEND_EXAMPLES,
    )
    _workload_args(p, data=True)
    add_fields(
        p.add_argument_group("constraints"),
        ("budget_usd", "budget_period", "deadline_hours", "objective", "max_gpus", "gpus", "providers"),
    )
    add_fields(
        p.add_argument_group("prices and hardware"),
        ("deployment", "pricing", "demand", "headroom", "fabric", "max_price_age_months"),
    )
    add_fields(p.add_argument_group("owning (--deployment on-prem)"), ONPREM)
    g = p.add_argument_group("input and output")
    add_fields(
        g, ("top", "profile"), helps={"profile": "calibration profile of your runs (default: GPU-stack)"}
    )
    g.add_argument(
        "--scenario", help="start from a named scenario (field-guide-case-study); flags override it"
    )
    g.add_argument(
        "--from",
        dest="from_file",
        metavar="SPEC.toml",
        help="re-run the inputs of an exported recommendation (flags given here override them)",
    )
    g.add_argument("--prior", action="store_true", help="use the efficiency priors, not the learned model")
    g.add_argument("--artefacts", metavar="DIR", help="write the chosen plan's launch artefacts into DIR")
    add_fields(g, ("benchmark_script",))
    _format_arg(g, ("table", "json", "toml"), "table, or -o's .toml/.json")
    _output_args(g)


def _predict_parser(sub: argparse._SubParsersAction) -> None:
    from advisor.cli.options import add_fields

    p = sub.add_parser(
        "predict",
        help="throughput, memory and step time of one GPU x count",
        description="Predict throughput (with a P10-P90 interval), per-GPU memory and step time "
        "of one workload on one GPU type and count.",
    )
    add_fields(
        p.add_argument_group("hardware"),
        ("gpu", "count", "fabric", "headroom"),
        required=("gpu",),
        defaults={"count": "1"},
        helps={"count": "number of GPUs, up to 65,536 in whole servers"},
    )
    _workload_args(p)
    add_fields(p.add_argument_group("calibration (gpu-advisor calibrate)"), ("profile", "stack_version"))
    p.add_argument("--prior", action="store_true", help="use the efficiency priors, not the learned model")
    _format_arg(p, ("table", "json"), "table")


def _gpus_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("gpus", help="the GPU catalogue", description="List the GPU catalogue.")
    _format_arg(p, ("table", "json"), "table")


def _models_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("models", help="the model catalogue", description="List the model catalogue.")
    _format_arg(p, ("table", "json"), "table")


def _prices_parser(sub: argparse._SubParsersAction) -> None:
    from advisor.cli.options import add_fields

    p = sub.add_parser(
        "prices", help="cloud GPU prices", description="List cloud GPU offers with date and source."
    )
    add_fields(
        p,
        ("gpu", "provider", "pricing", "max_price_age_months"),
        helps={
            "gpu": "only this GPU",
            "provider": "only this provider",
            "pricing": "only this pricing plan",
            "max_price_age_months": "flag offers older than this many months as stale (default 12)",
        },
    )
    _format_arg(p, ("table", "json"), "table")
    _prices_update_parser(p)


def _tco_parser(sub: argparse._SubParsersAction) -> None:
    from advisor.cli.options import add_fields
    from advisor.question.fields import of_part

    p = sub.add_parser(
        "tco",
        help="total cost of ownership and buy versus rent",
        description="Total cost of owning GPUs: hardware, network, power, operations (staff and "
        "maintenance, one category), space; break-even against the cheapest cloud plan.",
    )
    add_fields(p, ("gpu", "count", *of_part("tco")), required=("gpu", "count"))
    _format_arg(p, ("table", "json"), "table")


def _model_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "model",
        help="the benchmark-trained efficiency model",
        description="Train or evaluate the efficiency model learned from knowledge/benchmarks.csv.",
    )
    msub = p.add_subparsers(dest="model_command", metavar="ACTION", parser_class=Parser)
    mp = msub.add_parser(
        "train",
        help="refit from knowledge/benchmarks.csv and write the artifact",
        description="Refit the efficiency model (fixed seed) and write its parameters and metadata.",
    )
    mp.add_argument("--out-dir", help="folder for the artifact (default: the package's knowledge/)")
    mp = msub.add_parser(
        "evaluate",
        help="held-out-source and held-out-GPU errors against two baselines",
        description="Cross-validate the efficiency model (LLM rows by source and GPU, the others "
        "by GPU) against a constant MFU and the physical model; then serving.",
    )
    _format_arg(mp, ("table", "json"), "table")


def build_parser(command: str | None = None) -> Parser:
    """The command tree: the curated list of commands in the description, each listed once. Given a known
    `command`, only that command's parser is built: the user named it, and building the other eleven (each an
    argparse parser with its groups and options) was a fifth of a short command's start-up."""
    parser = Parser(prog="gpu-advisor", description=USAGE, usage="gpu-advisor [COMMAND] [options]")
    parser.add_argument("--version", action="version", version=f"gpu-advisor {__version__}")
    sub = parser.add_subparsers(
        dest="command", metavar="COMMAND", parser_class=Parser, help=argparse.SUPPRESS, prog="gpu-advisor"
    )
    for name, add in _COMMAND_PARSERS.items():
        if command in (None, name) or command not in _COMMAND_PARSERS:
            add(sub)
    return parser


def _checklist_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "checklist",
        help="troubleshooting steps by error type",
        description="Show the troubleshooting checklist: all error types, one, or a search.",
    )
    p.add_argument("error_type", nargs="?", metavar="TYPE", help="an error type id, e.g. oom, nccl-hang")
    p.add_argument("--search", help="text to look for across all entries")
    _format_arg(p, ("text", "json"), "text")


def _calibrate_parser(sub: argparse._SubParsersAction) -> None:
    from advisor.cli.options import add_fields

    p = sub.add_parser(
        "calibrate",
        help="calibrate predictions on your own measured runs",
        description="Read your measured runs (a runs CSV, a torchtitan, Hugging Face Trainer, Megatron-LM or "
        "NeMo training log, a Lightning ThroughputMonitor metrics.csv, or a vLLM or SGLang serving result) "
        "and store them in a profile: predictions for that GPU and stack or engine then move toward them. "
        "What a file does not say is given with the flags predict takes.",
    )
    p.add_argument("file", nargs="*", metavar="FILE", help="runs CSV, training log or serving result")
    g = p.add_argument_group("calibration")
    g.add_argument("--list", action="store_true", help="show the profiles and their runs")
    g.add_argument("--reset", action="store_true", help="remove the runs of --profile NAME")
    g.add_argument("--export", metavar="FILE", help="write the runs of --profile NAME to FILE (JSON)")
    g.add_argument("--force", action="store_true", help="let --export replace an existing file")
    g.add_argument("--dry-run", action="store_true", help="show what was read, line by line; store nothing")
    g.add_argument(
        "--refresh", action="store_true", help="re-predict the runs of --profile NAME with the current model"
    )
    g.add_argument(
        "--trust", action="store_true", help="store a run even when it is over 2x from the prediction"
    )
    add_fields(
        p.add_argument_group("hardware (what the file does not say)"),
        ("gpu", "count"),
        helps={"count": "number of GPUs the run used"},
    )
    _workload_args(p)
    add_fields(g, ("profile", "stack_version"))
    _format_arg(g, ("table", "json"), "table")


def _probe_parser(sub: argparse._SubParsersAction) -> None:
    from advisor.cli.probe_cli import add_probe_parser  # the node probe (its own module; torch only on use)

    add_probe_parser(sub)


def _serve_parser(sub: argparse._SubParsersAction) -> None:
    from tui.serve import add_serve_parser  # the UI in a browser

    add_serve_parser(sub)


def _fleet_parser(sub: argparse._SubParsersAction) -> None:
    from advisor.cli.fleet_cli import add_fleet_parser  # the fleet planner (its own module)

    add_fleet_parser(sub)


def _cost_parser(sub: argparse._SubParsersAction) -> None:
    """`gpu-advisor cost`: the field guide's cost formula, its worked example and its case study."""
    from advisor.cli.options import add_fields
    from advisor.question.fields import of_part

    p = sub.add_parser(
        "cost",
        help="the field guide's cost formula on your numbers",
        description="cost = GPU $/h x GPUs x hours x demand multiplier + storage $/GB-month x GB x "
        "months. --guide-example shows the guide's own example, its errors and the "
        "corrected result; --scenario shows its case study against today's prices.",
    )
    add_fields(
        p,
        ("gpu_usd_hour", "cost_gpus", "hours", "demand", *of_part("cost")[3:]),
        helps={"demand": "demand multiplier: static 1.0, fluctuating 1.2-1.5, high 1.3-1.7"},
    )
    p.add_argument("--guide-example", action="store_true", help="the guide's worked example, corrected")
    p.add_argument("--scenario", help="a named scenario: field-guide-case-study")
    _format_arg(p, ("text", "json"), "text")


def _prices_update_parser(p: argparse.ArgumentParser) -> None:
    """`gpu-advisor prices update`: refresh offers from SkyPilot-format catalogues."""
    psub = p.add_subparsers(dest="prices_command", metavar="ACTION", parser_class=Parser)
    up = psub.add_parser(
        "update",
        help="refresh offers from SkyPilot-format price catalogues",
        description="Read catalogs/v8/<cloud>/vms.csv files (SkyPilot's format) from a URL or a "
        "folder, validate every row and save the offers, dated today, in your data "
        "directory; the shipped snapshot stays as the fallback.",
    )
    up.add_argument(
        "--from",
        dest="from_dir",
        metavar="DIR",
        help="a folder holding <cloud>/vms.csv (or catalogs/v8/<cloud>/vms.csv) instead of the URL",
    )
    up.add_argument("--url", help="base URL of the catalogue (default: SkyPilot's public v8 catalogue)")
    up.add_argument("--cloud", help="comma-separated clouds to read (default: aws,gcp,lambda,runpod,azure)")
    up.add_argument("--dry-run", action="store_true", help="print what would change and write nothing")


# Each command's parser builder, in the order `choose from` lists them.
_COMMAND_PARSERS: dict[str, Callable[[argparse._SubParsersAction], None]] = {
    "gpus": _gpus_parser,
    "models": _models_parser,
    "prices": _prices_parser,
    "predict": _predict_parser,
    "recommend": _recommend_parser,
    "checklist": _checklist_parser,
    "tco": _tco_parser,
    "cost": _cost_parser,
    "model": _model_parser,
    "calibrate": _calibrate_parser,
    "probe": _probe_parser,
    "serve": _serve_parser,
    "fleet": _fleet_parser,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command. Exit 0 ok, 1 nothing fits, 2 bad input (or a path that cannot be read or written),
    3 knowledge error, 70 internal error, 130 interrupted; always one line on stderr, never a traceback
    (unless GPU_ADVISOR_DEBUG=1)."""
    if signal.getsignal(signal.SIGINT) is interrupted_while_starting:
        signal.signal(signal.SIGINT, signal.default_int_handler)  # from here, Ctrl-C is handled below
    return _run_safely(lambda: _main(argv))


_STATE = {"command": ""}


ONE_SHOT = frozenset({"predict", "recommend", "checklist", "gpus", "models", "tco", "cost"})
"""Commands that answer once and exit, with a bounded heap (a 70B recommend: a few MB more without the
collector): their process runs without the cyclic garbage collector."""


def _collect_no_cycles(command: str) -> None:
    """In the gpu-advisor process itself (never a program or a test that calls main()), a one-shot command
    turns the cyclic garbage collector off: its passes over the records the command builds cost a few
    percent of its CPU and free nothing it would need (reference counting still frees what is dropped).
    At exit, after the atexit handlers, the interpreter still runs three full collections over every object
    (about 4% of a predict's instructions): freezing them first makes those passes skip them all, while
    the process is ending anyway (files are closed and the standard streams flushed as before)."""
    if command in ONE_SHOT and (AS_COMMAND or os.path.basename(sys.argv[0]) == "gpu-advisor"):
        import atexit
        import gc

        gc.disable()
        atexit.register(gc.freeze)


def _main(argv: Sequence[str] | None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if not args_list:
        return _launch_ui()
    _collect_no_cycles(args_list[0])
    parser = build_parser(args_list[0])
    args, extras = parser.parse_known_args(args_list)
    if extras:
        _unknown(parser, args, extras)
    if args.command is None:
        parser.print_help()
        return 0
    _STATE["command"] = args.command
    from advisor.cli import commands  # deferred: keeps --help free of pydantic, numpy and the knowledge
    from advisor.cli.guards import check_args

    check_args(args, _command_parser(parser, args))
    if args.command == "serve":  # the UI in a browser: not a core command, so not in COMMANDS
        from tui.serve import run_serve

        return run_serve(args)
    if args.command == "fleet":  # the fleet planner lives in its own module
        from advisor.cli.fleet_cli import run_fleet

        return run_fleet(args)
    return commands.dispatch(args)


def _command_parser(parser: Parser, args: argparse.Namespace) -> Parser:
    """The (sub)parser of the command given: its flags are the ones to suggest and to name."""
    found = parser
    for dest in ("command", "model_command", "prices_command"):
        name = getattr(args, dest, None)
        sub = next((a for a in found._actions if isinstance(a, argparse._SubParsersAction)), None)
        if name is None or sub is None or name not in sub.choices:
            break
        found = sub.choices[name]
    return found


def _unknown(parser: Parser, args: argparse.Namespace, extras: list[str]) -> NoReturn:
    """One line for arguments no command takes, with the nearest flag where one is close."""
    from advisor.question.fields import did_you_mean

    command = _command_parser(parser, args)
    first = extras[0].split("=", 1)[0]
    hint = _elsewhere(parser, command, first) or (
        did_you_mean(first, command.option_strings()) if first.startswith("-") else ""
    )
    command.error(f"unrecognized arguments: {' '.join(extras)}" + (f"; {hint}" if hint else ""))


INSTEAD = {("recommend", "--count"): "it searches the GPU count: --max-gpus N caps it"}
"""What a command takes in place of another command's flag, where it differs."""


def _elsewhere(parser: Parser, command: Parser, flag: str) -> str:
    """'--X is a flag of A, B, not C' where other commands take the flag as given (a near miss misleads)."""
    sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
    name = next((n for n, p in sub.choices.items() if p is command), "") if sub is not None else ""
    if not name or not flag.startswith("--"):
        return ""
    every = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    others = [n for n, p in every.choices.items() if n != name and flag in p.option_strings()]
    if not others:
        return ""
    instead = INSTEAD.get((name, flag))
    return f"{flag} is a flag of {', '.join(others)}, not {name}" + (f" ({instead})" if instead else "")


def _say(message: str, prefix: str = "error") -> None:
    from advisor.question.checks import escape_controls

    where = f"gpu-advisor {_STATE['command']}".rstrip()
    line = escape_controls(" ".join(message.split()))
    print(f"{where}: {prefix}: {line}" if prefix else f"{where}: {line}", file=sys.stderr)


def _run_safely(run: Callable[[], int]) -> int:
    """run(), with every failure turned into one line on stderr and an exit code."""
    try:
        _tolerant_streams()
        code = run()
        sys.stdout.flush()  # a full disk or a closed pipe shows here, not as an ignored exception at exit
        return code
    except SystemExit:
        raise
    except KeyboardInterrupt:
        # Once is enough: a second Ctrl-C while we say so and exit must not end the process by the signal.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        print("\ngpu-advisor: interrupted", file=sys.stderr)
        _exit_if_command(130)
        return 130
    except BrokenPipeError:  # `gpu-advisor ... | head`: the reader left; say nothing more
        _silence_stdout()
        return 0
    except BaseException as exc:  # noqa: BLE001 - the one place every other failure becomes one line
        return _report(exc)


def _exit_if_command(code: int) -> None:
    """End this process now with code, when it is the command itself (never when main() runs in-process).

    CPython 3.11 marks a KeyboardInterrupt that passes through exec() of a string (dataclasses build their
    methods that way while a module loads) as unhandled, and then ends the process by SIGINT at exit even
    though it was caught here: the exit code would be -2, not 130. Everything is already saved atomically."""
    if AS_COMMAND:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


def _report(exc: BaseException) -> int:
    from advisor.question.errors import AdvisorError, InputError, KnowledgeError

    if isinstance(exc, KnowledgeError):
        _say(f"knowledge error: {exc}", "")
        return 3
    if isinstance(exc, InputError) and exc.structured:  # the core said which input: name it as a flag
        from advisor.question.fields import flag_of

        _say(exc.phrase(flag_of))
        return 2
    if isinstance(exc, AdvisorError):
        _say(str(exc))
        return 2
    if _is_validation_error(exc):
        err = exc.errors()[0]  # type: ignore[attr-defined]  # a pydantic ValidationError, checked by name above
        field = ".".join(str(p) for p in err["loc"])
        _say(f"--{field.replace('_', '-')}: {err['msg']} (got {err['input']!r})" if field else err["msg"])
        return 2
    if isinstance(exc, OSError):
        _say_oserror(exc)
        return 2
    if isinstance(exc, UnicodeError):
        _say(f"cannot encode the output for this terminal ({exc}); set PYTHONIOENCODING=utf-8")
        return 2
    if os.environ.get("GPU_ADVISOR_DEBUG") == "1":
        raise exc
    _say(f"{type(exc).__name__}: {exc} (a bug; GPU_ADVISOR_DEBUG=1 shows the traceback)", "internal error")
    return 70


def _is_validation_error(exc: BaseException) -> bool:
    pydantic = sys.modules.get("pydantic")
    return pydantic is not None and isinstance(exc, pydantic.ValidationError)


def _say_oserror(exc: OSError) -> None:
    if exc.errno == errno.EPIPE:
        _silence_stdout()
        return
    what = (exc.strerror or str(exc)).lower()
    name = exc.filename if exc.filename is not None else "standard output"
    _say(f"{name}: {what}" + (f" ({exc.filename2})" if exc.filename2 else ""))
    if exc.filename is None:  # most likely stdout itself: drop what is buffered so exit does not fail again
        _silence_stdout()


def _tolerant_streams() -> None:
    """A terminal or pipe that cannot show a character gets '?' instead of a UnicodeEncodeError."""
    for stream in (sys.stdout, sys.stderr):
        encoding = (getattr(stream, "encoding", "") or "").lower().replace("-", "")
        if encoding not in ("utf8", "utf8sig") and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="replace")


def _silence_stdout() -> None:
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _launch_ui() -> int:
    if not (_isatty(sys.stdin) and _isatty(sys.stdout)):
        print(
            "gpu-advisor: error: the guided UI needs a terminal (stdin and stdout are not one); "
            "run a subcommand instead (e.g. gpu-advisor recommend --help), or gpu-advisor serve for the UI "
            "in a "
            "browser",
            file=sys.stderr,
        )
        return 2
    try:
        from tui.app import run_app
    except ImportError:
        print(USAGE)
        return 0
    return run_app()


def _isatty(stream: object) -> bool:
    try:
        return bool(stream is not None and stream.isatty())  # type: ignore[attr-defined]  # any stream-like object
    except (ValueError, OSError):
        return False


if __name__ == "__main__":
    raise SystemExit(main())
