"""Provides read_run_file(): a run file's format told from its content, read by its reader."""

from __future__ import annotations

from advisor.catalog.run_logs import serving_results, training_logs
from advisor.catalog.run_logs.reading import Reading
from advisor.question.checks import shown
from advisor.question.errors import InputError

FORMATS = (
    "a runs CSV, a torchtitan, Hugging Face Trainer, Megatron-LM or NeMo training log, a Lightning "
    "ThroughputMonitor metrics.csv, or a vLLM or SGLang serving result"
)
_TRAINING = (
    training_logs.torchtitan,
    training_logs.hf_trainer,
    training_logs.megatron,
    training_logs.nemo,
    training_logs.lightning,
)


def read_run_file(text: str, name: str) -> list[Reading]:
    """Every run a log or result file holds; InputError (one line) for a file of no known format or one
    without a throughput line."""
    served = serving_results.serving_result(text, name)
    found = served or [r for reader in _TRAINING if (r := reader(text, name)) is not None][:1]
    if not found:
        raise InputError(f"{shown(name)}: not a run file gpu-advisor reads; give {FORMATS}")
    empty = [r for r in found if not r.measured]
    if empty:
        what = "output_throughput" if empty[0].kind == "serving" else "throughput or step-time line"
        raise InputError(
            f"{shown(empty[0].source)}: a {empty[0].format} file without a {what}; "
            "nothing was stored (was the run stopped before its first log line?)"
        )
    return found
