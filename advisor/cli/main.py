"""Provides main(): the argument parser of every gpu-advisor command; heavy imports wait for the command."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn, Sequence

from advisor import __version__

WORKLOADS = ("pretrain", "finetune", "lora", "qlora", "inference")
PRECISIONS = ("auto", "fp32", "tf32", "fp16", "bf16", "fp8", "int8", "int4")

USAGE = """gpu-advisor: which GPU, how many, on which plan, how long and at what cost, for one ML workload.

  gpu-advisor                      open the guided terminal UI
  gpu-advisor recommend ...        ranked plans for a workload (see recommend --help)
  gpu-advisor predict ...          throughput, memory and step time of one GPU x count
  gpu-advisor checklist [TYPE]     troubleshooting steps by error type
  gpu-advisor tco ...              total cost of owning GPUs, and buy versus rent
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
    g.add_argument("--workload", choices=WORKLOADS, help="pretrain, finetune (full), lora, qlora or inference "
                                                         "(default: finetune for catalogue LLMs, else pretrain)")
    g.add_argument("--model", help="catalogue id or alias, e.g. llama-2-70b, resnet50 (see `gpu-advisor models`)")
    g.add_argument("--params", help="a custom dense transformer of this size instead of --model, e.g. 13B")
    g.add_argument("--precision", choices=PRECISIONS, help="default auto: bf16 where the GPU has it, else fp16")
    g.add_argument("--seq-len", help="tokens per sequence")
    g.add_argument("--batch-size", help="micro-batch per GPU (default: the benchmarks' batch, or what fits)")
    g.add_argument("--optimizer", choices=("adamw", "adam8bit", "sgd"), help="default adamw")
    g.add_argument("--lora-rank", help="LoRA rank (default 16)")
    if inference:
        g.add_argument("--requests-per-s", help="inference load, requests per second (default 1)")
        g.add_argument("--prompt-tokens", help="inference prompt length (default 512)")
        g.add_argument("--output-tokens", help="inference output length (default 256)")
        g.add_argument("--tpot-ms", help="latency target per output token, ms (default 50)")
        g.add_argument("--ttft-ms", help="latency target to the first token, ms (optional)")


def _format_arg(p: argparse.ArgumentParser, choices: Sequence[str], default: str) -> None:
    p.add_argument("--format", choices=choices, default=None, help=f"output format (default {default})")


def _output_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE atomically instead of printing")
    p.add_argument("--force", action="store_true", help="let -o replace an existing file")


def build_parser() -> Parser:
    """The whole command tree."""
    parser = Parser(prog="gpu-advisor", description=USAGE, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"gpu-advisor {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)

    p = sub.add_parser("gpus", help="the GPU catalogue", description="List the GPU catalogue.")
    _format_arg(p, ("table", "json"), "table")
    p = sub.add_parser("models", help="the model catalogue", description="List the model catalogue.")
    _format_arg(p, ("table", "json"), "table")
    p = sub.add_parser("prices", help="cloud GPU prices", description="List cloud GPU offers with date and source.")
    p.add_argument("--gpu", help="only this GPU")
    p.add_argument("--provider", help="only this provider")
    p.add_argument("--pricing", choices=("on-demand", "spot", "reserved"), help="only this pricing plan")
    _format_arg(p, ("table", "json"), "table")

    p = sub.add_parser("predict", help="throughput, memory and step time of one GPU x count",
                       description="Predict throughput (with a P10-P90 interval), per-GPU memory and step time "
                                   "of one workload on one GPU type and count.")
    _workload_args(p)
    p.add_argument("--gpu", required=True, help="GPU id or alias")
    p.add_argument("--count", default="1", help="number of GPUs (default 1)")
    p.add_argument("--fabric", help="inter-node network (default: the GPU's usual fabric)")
    p.add_argument("--headroom", help="fraction of GPU memory to keep free (default 0.10)")
    p.add_argument("--prior", action="store_true", help="use the efficiency priors, not the learned model")
    _format_arg(p, ("table", "json"), "table")

    p = sub.add_parser("recommend", help="ranked plans for a workload",
                       description="Rank GPU x count x layout plans for a workload under a budget and deadline.")
    _workload_args(p)
    g = p.add_argument_group("data")
    g.add_argument("--tokens", help="training tokens, e.g. 2T (LLMs)")
    g.add_argument("--samples", help="training samples per epoch (non-LLM models)")
    g.add_argument("--epochs", help="epochs over --samples or --tokens (default 1)")
    g.add_argument("--dataset-gb", help="data set size to store, GB (default 0)")
    g = p.add_argument_group("constraints")
    g.add_argument("--budget", help="USD, e.g. 20000 or 20k")
    g.add_argument("--budget-period", choices=("job", "month"), help="the budget is per job (default) or per month")
    g.add_argument("--deadline", help="hours (72), or 3d, 2w, 1mo")
    g.add_argument("--deployment", choices=("cloud", "on-prem"), help="default cloud")
    g.add_argument("--pricing", choices=("on-demand", "spot", "reserved"), help="default on-demand")
    g.add_argument("--demand", choices=("static", "fluctuating", "high"),
                   help="demand volatility: static 1.0x, fluctuating 1.2-1.5x, high 1.3-1.7x (default static)")
    g.add_argument("--provider", help="comma-separated providers to allow, e.g. aws,gcp,lambda")
    g.add_argument("--gpu", help="comma-separated GPU ids to allow")
    g.add_argument("--objective", choices=("cheapest", "fastest", "balanced"), help="default balanced")
    g.add_argument("--max-gpus", help="largest count to consider (default 1024)")
    g.add_argument("--headroom", help="fraction of GPU memory to keep free (default 0.10)")
    g.add_argument("--fabric", help="inter-node network for every GPU (default: each GPU's usual fabric)")
    g.add_argument("--electricity-usd-kwh", help="on-prem: power tariff")
    g.add_argument("--utilization", help="on-prem: average utilisation of the owned GPUs")
    g.add_argument("--years", help="on-prem: amortisation period")
    p.add_argument("--top", help="how many plans to show (default 5)")
    p.add_argument("--from", dest="from_file", metavar="SPEC.toml",
                   help="re-run the inputs of an exported recommendation (flags given here override them)")
    p.add_argument("--prior", action="store_true", help="use the efficiency priors, not the learned model")
    p.add_argument("--artefacts", metavar="DIR", help="write the chosen plan's launch artefacts into DIR")
    _format_arg(p, ("table", "json", "toml"), "table")
    _output_args(p)

    p = sub.add_parser("checklist", help="troubleshooting steps by error type",
                       description="Show the troubleshooting checklist: all error types, one, or a search.")
    p.add_argument("error_type", nargs="?", help="an error type id, e.g. oom, nccl-hang")
    p.add_argument("--search", help="text to look for across all entries")
    _format_arg(p, ("text", "json"), "text")

    p = sub.add_parser("tco", help="total cost of ownership and buy versus rent",
                       description="Total cost of owning GPUs: hardware, power, staff, space, network; "
                                   "break-even against the cheapest cloud plan.")
    p.add_argument("--gpu", required=True, help="GPU id or alias")
    p.add_argument("--count", required=True, help="number of GPUs")
    p.add_argument("--years", help="amortisation period (default 3)")
    p.add_argument("--utilization", help="average utilisation, 0-1 (default 0.75, the field guide's target)")
    p.add_argument("--electricity-usd-kwh", help="power tariff, USD per kWh")
    p.add_argument("--pue", help="data-centre power usage effectiveness (default 1.4)")
    p.add_argument("--staff-usd-year", help="operations staff cost per year for this cluster")
    p.add_argument("--off-peak-usd-kwh", help="off-peak tariff for 22:00-08:00, USD per kWh")
    p.add_argument("--gpu-hours-per-month", help="your predicted GPU-hours per month (default: utilisation x hours)")
    _format_arg(p, ("table", "json"), "table")

    p = sub.add_parser("model", help="the benchmark-trained efficiency model",
                       description="Train or evaluate the efficiency model learned from knowledge/benchmarks.csv.")
    msub = p.add_subparsers(dest="model_command", metavar="ACTION", parser_class=Parser)
    mp = msub.add_parser("train", help="refit from knowledge/benchmarks.csv and write the artifact",
                         description="Refit the efficiency model (fixed seed) and write its parameters and metadata.")
    mp.add_argument("--out-dir", help="folder for the artifact (default: the package's knowledge/)")
    mp = msub.add_parser("evaluate", help="leave-one-GPU-out and leave-one-workload-out errors",
                         description="Cross-validate the efficiency model against the constant-efficiency baseline.")
    _format_arg(mp, ("table", "json"), "table")

    p = sub.add_parser("calibrate", help="refit on your own measured runs",
                       description="Add your measured runs (benchmarks.csv schema) and refit; --reset undoes it.")
    p.add_argument("file", nargs="?", help="CSV of measured runs")
    p.add_argument("--reset", action="store_true", help="remove your calibration data and model")

    from advisor.cli.serve import add_serve_parser  # the UI in a browser (ui11)

    add_serve_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; exit 0 ok, 1 nothing fits, 2 bad input."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    if not args_list:
        return _launch_ui()
    parser = build_parser()
    args = parser.parse_args(args_list)
    if args.command is None:
        parser.print_help()
        return 0
    from advisor.cli import commands  # deferred: keeps --help free of pydantic, numpy and the knowledge
    from advisor.errors import AdvisorError, InputError, KnowledgeError

    try:
        if args.command == "serve":  # the UI in a browser (ui11): not a core command, so not in COMMANDS
            from advisor.cli.serve import run_serve

            return run_serve(args)
        return commands.dispatch(args)
    except InputError as exc:
        print(f"gpu-advisor {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KnowledgeError as exc:
        print(f"gpu-advisor: knowledge error: {exc}", file=sys.stderr)
        return 3
    except AdvisorError as exc:
        print(f"gpu-advisor {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `gpu-advisor ... | head`: the reader left; say nothing more
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _launch_ui() -> int:
    try:
        from tui.app import run_app
    except ImportError:
        print(USAGE)
        return 0
    return run_app()


if __name__ == "__main__":
    raise SystemExit(main())
