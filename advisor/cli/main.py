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
from advisor.question.vocab import (
    BUDGET_PERIODS,
    DEMANDS,
    DEPLOYMENTS,
    ENGINES,
    LORA_TARGETS,
    OBJECTIVES,
    OFFLOADS,
    OPTIMIZER_ALIASES,
    OPTIMIZERS,
    PRECISIONS,
    PRICING_PLANS,
    RECOMPUTES,
    STACKS,
    WORKLOADS,
)

USAGE = """gpu-advisor: which GPU, how many, on which plan, how long and at what cost, for one ML workload.

  gpu-advisor                      open the guided terminal UI
  gpu-advisor recommend ...        ranked plans for a workload (see recommend --help)
  gpu-advisor predict ...          throughput, memory and step time of one GPU x count
  gpu-advisor checklist [TYPE]     troubleshooting steps by error type
  gpu-advisor tco ...              total cost of owning GPUs, and buy versus rent
  gpu-advisor cost ...             the field guide's cost formula (--guide-example, --scenario)
  gpu-advisor prices update        refresh cloud prices from SkyPilot-format catalogues
  gpu-advisor gpus | models | prices   the catalogues
  gpu-advisor model train|evaluate     the benchmark-trained efficiency model
  gpu-advisor calibrate FILE.csv   refit the efficiency model on your own measured runs

Example: gpu-advisor recommend --model llama-2-70b --workload finetune --precision bf16 --budget 20000"""


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit 2) instead of usage dumps."""

    def error(self, message: str) -> NoReturn:
        """Print one line naming the bad value and exit 2."""
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def _workload_args(p: argparse.ArgumentParser, *, inference: bool = True) -> None:
    g = p.add_argument_group("workload")
    g.add_argument(
        "--workload",
        choices=WORKLOADS,
        help="pretrain, finetune (full), lora, qlora or inference "
        "(default: finetune for catalogue LLMs, else pretrain)",
    )
    g.add_argument(
        "--model", help="catalogue id or alias, e.g. llama-2-70b, resnet50 (see `gpu-advisor models`)"
    )
    g.add_argument("--params", help="a custom dense transformer of this size instead of --model, e.g. 13B")
    g.add_argument(
        "--config", metavar="PATH", help="a Hugging Face config.json (or its folder) instead of --model"
    )
    _shape_args(p)
    g.add_argument(
        "--precision", choices=PRECISIONS, help="default auto: bf16 where the GPU has it, else fp16"
    )
    g.add_argument("--seq-len", help="tokens per sequence")
    g.add_argument(
        "--micro-batch",
        "--batch-size",
        dest="batch_size",
        help="micro-batch per GPU (default: the benchmarks' batch, or the fastest that fits)",
    )
    g.add_argument(
        "--optimizer",
        choices=(*OPTIMIZERS, *OPTIMIZER_ALIASES),
        help="default adamw (adam8bit is read as adamw-8bit)",
    )
    g.add_argument("--lora-rank", help="LoRA rank (default 16)")
    _config_args(p)
    if inference:
        g.add_argument("--requests-per-s", help="inference load, requests per second (default 1)")
        g.add_argument("--prompt-tokens", help="inference prompt length (default 512)")
        g.add_argument("--output-tokens", help="inference output length (default 256)")
        g.add_argument("--tpot-ms", help="latency target per output token, ms (default 50)")
        g.add_argument("--ttft-ms", help="latency target to the first token, ms (optional)")


def _shape_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("model shape (instead of --model: a Llama-style decoder of this shape)")
    for name, what in (
        ("layers", "transformer blocks"),
        ("hidden", "hidden size"),
        ("heads", "attention heads"),
        ("kv-heads", "key-value heads (grouped-query attention)"),
        ("ffn", "FFN width (gated)"),
        ("vocab", "vocabulary size"),
        ("experts", "routed experts (MoE; default 1)"),
        ("experts-per-token", "experts each token visits (MoE)"),
    ):
        g.add_argument(f"--{name}", help=what)


def _config_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("configuration (each value given is held fixed; the rest is searched)")
    for dim, what in (
        ("tp", "tensor"),
        ("pp", "pipeline"),
        ("cp", "context"),
        ("ep", "expert"),
        ("dp", "data"),
    ):
        g.add_argument(f"--{dim}", help=f"{what}-parallel size")
    g.add_argument("--zero", choices=("0", "1", "2", "3"), help="ZeRO stage: 0 = DDP, 3 = FSDP full shard")
    g.add_argument(
        "--shard-group", help="hybrid sharding (HSDP): shard within groups of N ranks, replicate across"
    )
    g.add_argument("--recompute", choices=RECOMPUTES, help="activation recomputation")
    g.add_argument("--global-batch", help="sequences (samples) per optimizer step")
    g.add_argument("--global-batch-tokens", help="tokens per optimizer step, e.g. 4M")
    g.add_argument("--pp-schedule", help="1f1b or interleaved:V")
    g.add_argument("--no-master-weights", action="store_true", help="pure 16-bit: no fp32 master copy")
    g.add_argument("--offload", choices=OFFLOADS, help="move states to host memory")
    g.add_argument("--lora-targets", choices=LORA_TARGETS, help="LoRA on every linear layer or attention")
    g.add_argument("--stack", choices=STACKS, help="training stack (decides the loss path and overhead)")
    g.add_argument("--engine", choices=ENGINES, help="serving engine")


def _format_arg(p: argparse.ArgumentParser, choices: Sequence[str], default: str) -> None:
    p.add_argument("--format", choices=choices, default=None, help=f"output format (default {default})")


def _output_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE atomically instead of printing")
    p.add_argument("--force", action="store_true", help="let -o replace an existing file")


def build_parser() -> Parser:
    """The whole command tree."""
    parser = Parser(
        prog="gpu-advisor", description=USAGE, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"gpu-advisor {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)

    p = sub.add_parser("gpus", help="the GPU catalogue", description="List the GPU catalogue.")
    _format_arg(p, ("table", "json"), "table")
    p = sub.add_parser("models", help="the model catalogue", description="List the model catalogue.")
    _format_arg(p, ("table", "json"), "table")
    p = sub.add_parser(
        "prices", help="cloud GPU prices", description="List cloud GPU offers with date and source."
    )
    p.add_argument("--gpu", help="only this GPU")
    p.add_argument("--provider", help="only this provider")
    p.add_argument("--pricing", choices=PRICING_PLANS, help="only this pricing plan")
    p.add_argument(
        "--max-price-age", metavar="MONTHS", help="flag offers older than this as stale (default 12)"
    )
    _format_arg(p, ("table", "json"), "table")
    _prices_update_parser(p)

    p = sub.add_parser(
        "predict",
        help="throughput, memory and step time of one GPU x count",
        description="Predict throughput (with a P10-P90 interval), per-GPU memory and step time "
        "of one workload on one GPU type and count.",
    )
    _workload_args(p)
    p.add_argument("--gpu", required=True, help="GPU id or alias")
    p.add_argument("--count", default="1", help="number of GPUs, up to 65,536 in whole servers (default 1)")
    p.add_argument("--fabric", help="inter-node network (default: the GPU's usual fabric)")
    p.add_argument("--headroom", help="fraction of the usable GPU memory to keep free (default 0)")
    p.add_argument("--prior", action="store_true", help="use the efficiency priors, not the learned model")
    _format_arg(p, ("table", "json"), "table")

    p = sub.add_parser(
        "recommend",
        help="ranked plans for a workload",
        description="Rank GPU x count x layout plans for a workload under a budget and deadline.",
    )
    _workload_args(p)
    g = p.add_argument_group("data")
    g.add_argument("--tokens", help="training tokens, e.g. 2T (LLMs)")
    g.add_argument("--samples", help="training samples per epoch (non-LLM models)")
    g.add_argument("--epochs", help="epochs over --samples or --tokens (default 1)")
    g.add_argument("--dataset-gb", help="data set size to store, GB (default 0)")
    g = p.add_argument_group("constraints")
    g.add_argument("--budget", help="USD, e.g. 20000 or 20k")
    g.add_argument(
        "--budget-period", choices=BUDGET_PERIODS, help="the budget is per job (default) or per month"
    )
    g.add_argument("--deadline", help="hours (72), or 3d, 2w, 1mo")
    g.add_argument("--deployment", choices=DEPLOYMENTS, help="default cloud")
    g.add_argument("--pricing", choices=PRICING_PLANS, help="default on-demand")
    g.add_argument(
        "--demand",
        choices=DEMANDS,
        help="demand volatility: static 1.0x, fluctuating 1.2-1.5x, high 1.3-1.7x (default static)",
    )
    g.add_argument("--provider", help="comma-separated providers to allow, e.g. aws,gcp,lambda")
    g.add_argument("--gpu", help="comma-separated GPU ids to allow")
    g.add_argument("--objective", choices=OBJECTIVES, help="default balanced")
    g.add_argument("--max-gpus", help="largest count to consider, up to 65536 (default 1024)")
    g.add_argument("--headroom", help="fraction of the usable GPU memory to keep free (default 0)")
    g.add_argument("--fabric", help="inter-node network for every GPU (default: each GPU's usual fabric)")
    g.add_argument(
        "--max-price-age",
        metavar="MONTHS",
        help="leave out cloud offers older than this many months (default 12)",
    )
    g.add_argument("--electricity-usd-kwh", help="on-prem: power tariff")
    g.add_argument("--utilization", help="on-prem: average utilisation of the owned GPUs")
    g.add_argument("--years", help="on-prem: amortisation period")
    p.add_argument("--top", help="how many plans to show (default 5)")
    p.add_argument(
        "--scenario", help="start from a named scenario (field-guide-case-study); flags override it"
    )
    p.add_argument(
        "--from",
        dest="from_file",
        metavar="SPEC.toml",
        help="re-run the inputs of an exported recommendation (flags given here override them)",
    )
    p.add_argument("--prior", action="store_true", help="use the efficiency priors, not the learned model")
    p.add_argument("--artefacts", metavar="DIR", help="write the chosen plan's launch artefacts into DIR")
    _format_arg(p, ("table", "json", "toml"), "table")
    _output_args(p)

    p = sub.add_parser(
        "checklist",
        help="troubleshooting steps by error type",
        description="Show the troubleshooting checklist: all error types, one, or a search.",
    )
    p.add_argument("error_type", nargs="?", help="an error type id, e.g. oom, nccl-hang")
    p.add_argument("--search", help="text to look for across all entries")
    _format_arg(p, ("text", "json"), "text")

    p = sub.add_parser(
        "tco",
        help="total cost of ownership and buy versus rent",
        description="Total cost of owning GPUs: hardware, network, power, operations (staff and "
        "maintenance, one category), space; "
        "break-even against the cheapest cloud plan.",
    )
    p.add_argument("--gpu", required=True, help="GPU id or alias")
    p.add_argument("--count", required=True, help="number of GPUs")
    p.add_argument("--years", help="amortisation period (default 3)")
    p.add_argument("--utilization", help="average utilisation, 0-1 (default 0.75, the field guide's target)")
    p.add_argument("--electricity-usd-kwh", help="power tariff, USD per kWh")
    p.add_argument(
        "--pue", help="data-centre power usage effectiveness (default 1.58, Uptime Institute 2023 average)"
    )
    p.add_argument(
        "--staff-usd-year",
        help="operations (staff and maintenance) cost per year for this cluster "
        "(default: the guide's 15%% of the amortised hardware cost)",
    )
    p.add_argument("--off-peak-usd-kwh", help="off-peak tariff for 22:00-08:00, USD per kWh")
    p.add_argument(
        "--gpu-hours-per-month", help="your predicted GPU-hours per month (default: utilisation x hours)"
    )
    _format_arg(p, ("table", "json"), "table")

    _cost_parser(sub)

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

    p = sub.add_parser(
        "calibrate",
        help="refit on your own measured runs",
        description="Add your measured runs (benchmarks.csv schema) and refit; --reset undoes it.",
    )
    p.add_argument("file", nargs="?", help="CSV of measured runs")
    p.add_argument("--list", action="store_true", help="show the runs stored so far")
    p.add_argument("--reset", action="store_true", help="remove your calibration data and model")
    _format_arg(p, ("table", "json"), "table")

    from advisor.cli.serve import add_serve_parser  # the UI in a browser

    add_serve_parser(sub)
    return parser


def _cost_parser(sub: argparse._SubParsersAction) -> None:
    """`gpu-advisor cost`: the field guide's cost formula, its worked example and its case study."""
    p = sub.add_parser(
        "cost",
        help="the field guide's cost formula on your numbers",
        description="cost = GPU $/h x GPUs x hours x demand multiplier + storage $/GB-month x GB x "
        "months. --guide-example shows the guide's own example, its errors and the "
        "corrected result; --scenario shows its case study against today's prices.",
    )
    p.add_argument("--gpu-usd-hour", help="price of one GPU-hour, USD")
    p.add_argument("--gpus", help="number of GPUs")
    p.add_argument("--hours", help="hours of use")
    p.add_argument(
        "--demand",
        choices=DEMANDS,
        help="demand multiplier: static 1.0, fluctuating 1.2-1.5, high 1.3-1.7 (default static)",
    )
    p.add_argument("--volatility", help="your own demand multiplier instead of --demand")
    p.add_argument("--storage-gb", help="data kept in storage, GB (default 0)")
    p.add_argument("--storage-months", help="months it is kept (default: the hours, in months)")
    p.add_argument("--storage-usd-gb-month", help="storage price (default: the provider's sourced price)")
    p.add_argument("--provider", help="provider whose storage price to use (default aws)")
    p.add_argument("--storage-kind", choices=("object", "block"), help="object (default) or block storage")
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


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command. Exit 0 ok, 1 nothing fits, 2 bad input (or a path that cannot be read or written),
    3 knowledge error, 70 internal error, 130 interrupted; always one line on stderr, never a traceback
    (unless GPU_ADVISOR_DEBUG=1)."""
    return _run_safely(lambda: _main(argv))


_STATE = {"command": ""}


def _main(argv: Sequence[str] | None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if not args_list:
        return _launch_ui()
    parser = build_parser()
    args = parser.parse_args(args_list)
    if args.command is None:
        parser.print_help()
        return 0
    _STATE["command"] = args.command
    from advisor.cli import commands  # deferred: keeps --help free of pydantic, numpy and the knowledge
    from advisor.cli.guards import check_args

    check_args(args)
    if args.command == "serve":  # the UI in a browser: not a core command, so not in COMMANDS
        from advisor.cli.serve import run_serve

        return run_serve(args)
    return commands.dispatch(args)


def _say(message: str, prefix: str = "error") -> None:
    from advisor.question.checks import escape_controls

    where = f"gpu-advisor {_STATE['command']}".rstrip()
    line = escape_controls(" ".join(message.split()))
    print(f"{where}: {prefix}: {line}" if prefix else f"{where}: {line}", file=sys.stderr)


def _run_safely(run: Callable[[], int]) -> int:
    """run(), with every failure turned into one line on stderr and an exit code."""
    _tolerant_streams()
    try:
        code = run()
        sys.stdout.flush()  # a full disk or a closed pipe shows here, not as an ignored exception at exit
        return code
    except SystemExit:
        raise
    except KeyboardInterrupt:
        print("\ngpu-advisor: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `gpu-advisor ... | head`: the reader left; say nothing more
        _silence_stdout()
        return 0
    except BaseException as exc:  # noqa: BLE001 - the one place every other failure becomes one line
        return _report(exc)


def _report(exc: BaseException) -> int:
    from advisor.question.errors import AdvisorError, InputError, KnowledgeError

    if isinstance(exc, KnowledgeError):
        _say(f"knowledge error: {exc}", "")
        return 3
    if isinstance(exc, InputError) and exc.structured:  # the core said which input: name it as a flag
        from advisor.cli.commands import FLAG

        _say(exc.phrase(lambda field: FLAG.get(field) or "--" + field.replace("_", "-")))
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
