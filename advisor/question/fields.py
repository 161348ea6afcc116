"""Provides the field registry: every input's name, kind, bound, words and parser, stated once.

Each front end is derived from it, in the manner of Trogon's schema-to-form: the CLI builds its options
(flag, choices, help with the default) and names inputs by `flag`; the wizard builds its rows (label, hint,
placeholder, choices) and names inputs by `label`; both read a value with `parse`, which holds it to the
field's `bound` and words a refusal as a structured InputError (field, value, problem, accepted), so the same
bad value is refused the same way at every door (flags, the wizard, `--from` files, portfolios, stored runs).
Which fields a workload uses (`applies_to`, `needs`) is stated here too, for the CLI's refusals, the
wizard's hidden rows and the configuration check alike.

Pydantic-free and cheap to import on purpose: `--help` and the wizard's first frame read it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple, TypedDict

from advisor.question.checks import Bound, shown
from advisor.question.errors import InputError
from advisor.question.units import DURATION_EXAMPLES, number_of, parse_duration
from advisor.question.vocab import (
    BUDGET_PERIODS,
    DEMANDS,
    DEPLOYMENTS,
    ENGINES,
    FUSED_LOSSES,
    LORA_TARGETS,
    MOE_DISPATCHERS,
    OBJECTIVES,
    OFFLOADS,
    OPTIMIZER_ALIASES,
    OPTIMIZERS,
    PRECISIONS,
    PRICING_PLANS,
    RECOMPUTE_MODULES,
    RECOMPUTES,
    REQUEST_LENGTHS,
    SLO_PERCENTILES,
    STACK_ALIASES,
    STACKS,
    WORKLOADS,
)

TRAINING = frozenset(w for w in WORKLOADS if w != "inference")
INFERENCE = frozenset({"inference"})
LORA = frozenset({"lora", "qlora"})
ALL = frozenset(WORKLOADS)
KIND_WORDS = {TRAINING: "training workloads", INFERENCE: "inference", LORA: "LoRA and QLoRA"}
"""How a set of workload kinds is said in a refusal."""


class Field(NamedTuple):
    """One input: what it is, what it accepts, where it applies, and how each front end names and asks for it.

    kind: how text is read: number (13B, 20k, 1e9), duration (72, 3d, 2w), fraction (0.1 or 10%), choice,
    switch (on/off), text, list (comma-separated) or path. part: where the value goes (workload, config,
    spec, constraints, tco, cost, command). auto: blank or 'auto' leaves the value to the search or the
    default. needs: a condition beyond the workload kind (on-prem, cloud, transformer) under which it applies.
    """

    name: str
    kind: str
    part: str
    label: str
    flag: str
    help: str
    bound: Bound | None = None
    choices: tuple[str, ...] = ()
    applies_to: frozenset[str] = ALL
    needs: str = ""
    hint: str = ""
    placeholder: str = ""
    example: str = ""
    default: str = ""
    """The default as the CLI's help states it ('' when there is none to state)."""
    auto: bool = False
    metavar: str = ""
    aliases: Mapping[str, str] | None = None
    """Old or short names read as a choice: {'adam8bit': 'adamw-8bit'}."""

    @property
    def integer(self) -> bool:
        """Whether the value must be whole."""
        return self.bound is not None and self.bound.integer

    @property
    def parser(self) -> Callable[[Field, object], Any]:
        """How a raw value (typed text, a number or list from a file) becomes the field's value."""
        return PARSERS[self.kind]

    def parse(self, raw: object) -> Any:
        """The value of raw (None for blank or 'auto' where the field allows it); InputError otherwise."""
        if raw is None:
            return None
        if isinstance(raw, str) and not isinstance(raw, Aliased):  # an Aliased is read already, and kept
            raw = raw.strip()
            if not raw or (self.auto and raw.lower() == "auto"):
                return None
        return self.parser(self, raw)

    def accepted(self) -> str:
        """What the field accepts, in words."""
        if self.kind in ("choice", "switch"):
            return "one of " + ", ".join(self.choices)
        if self.kind == "duration":
            return DURATION_EXAMPLES
        text = self.bound.accepted() if self.bound is not None else "a value"
        return f"{text}, e.g. {self.example}" if self.example else text

    def applies(self, kind: str | None, deployment: str | None = None) -> bool:
        """Whether the field is used by a workload kind (None: training) and deployment (None: any)."""
        if (kind or "pretrain") not in self.applies_to:
            return False
        if self.needs == "on-prem" and deployment is not None:
            return deployment == "on-prem"
        if self.needs == "cloud" and deployment is not None:
            return deployment != "on-prem"
        return True


def _fail(f: Field, raw: object, problem: str, accepted: str | None = None) -> InputError:
    accepted = f.accepted() if accepted is None else accepted
    return InputError(
        f"{f.name}: {shown(raw)} {problem}; {accepted}",
        field=f.name,
        value=raw,
        problem=problem,
        accepted=accepted,
    )


def _bounded(f: Field, raw: object, number: float) -> float | int:
    """number held to the field's bound: finite, in range, whole where it must be."""
    b = f.bound
    if not math.isfinite(number):
        raise _fail(f, raw, "is not a finite number")
    if b is None:
        return number
    if number <= b.lo if b.lo_open else number < b.lo:
        raise _fail(f, raw, f"must be {b.low()}")
    if number >= b.hi if b.hi_open else number > b.hi:
        raise _fail(f, raw, f"must be {b.high()}")
    if b.integer:
        if number != int(number):
            raise _fail(f, raw, "must be a whole number")
        return int(number)
    return number


def _number(f: Field, raw: object) -> float | int:
    if isinstance(raw, bool) or not isinstance(raw, (int, float, str)):
        raise _fail(f, raw, "is not a number")
    number = number_of(raw)
    if number is None:
        raise _fail(f, raw, "is not a number")
    return _bounded(f, raw, number)


def _duration(f: Field, raw: object) -> float | int:
    if isinstance(raw, bool) or not isinstance(raw, (int, float, str)):
        raise _fail(f, raw, "is not a duration")
    hours, problem, accepted = parse_duration(raw)
    if problem:
        raise _fail(f, raw, problem, accepted)
    return _bounded(f, raw, hours)


def _fraction(f: Field, raw: object) -> float | int:
    if isinstance(raw, str) and raw.endswith("%"):
        number = number_of(raw[:-1])
        if number is None:
            raise _fail(f, raw, "is not a number")
        return _bounded(f, raw, number / 100)
    return _number(f, raw)


def near(word: str, options: Iterable[str]) -> list[str]:
    """The options closest to a mistyped word (difflib), best first; empty when none is close."""
    import difflib  # only a refusal needs it

    options = list(options)
    lowered = {o.lower(): o for o in options}
    return [lowered[m] for m in difflib.get_close_matches(word.lower(), list(lowered), n=3, cutoff=0.6)]


def did_you_mean(word: str, options: Iterable[str]) -> str:
    """'did you mean 'x'?' for the nearest option, or '' when none is close."""
    found = near(word, options)
    return f"did you mean {found[0]!r}?" if found else ""


INT_CHOICES = frozenset({"zero", "slo_percentile"})
"""Choices whose values are whole numbers (ZeRO's stage, the latency percentile)."""


class Aliased(str):
    """A choice read from an alias, which remembers the name given: `--stack pytorch` is the value 'fsdp'
    (equal to it everywhere) whose `given` is 'pytorch', so that the answer can say what it was answered as
    (advisor/job/inputs.py RunConfig keeps the name in `stack_named`)."""

    __slots__ = ("given",)
    given: str

    def __new__(cls, value: str, given: str) -> Aliased:
        out = super().__new__(cls, value)
        out.given = given
        return out

    def __reduce__(self) -> tuple[Any, ...]:
        return (Aliased, (str(self), self.given))


def _choice(f: Field, raw: object) -> Any:
    if isinstance(raw, Aliased) and raw in f.choices:  # read once already (a flag, then the door)
        return raw
    text = str(raw).strip().lower() if isinstance(raw, (str, int)) and not isinstance(raw, bool) else None
    if text is not None and f.aliases and text in f.aliases:
        # An old name is just the new one (adam8bit); a stack of the measured runs is answered as another,
        # and the answer says so: the name given travels with the value.
        resolved = f.aliases[text]
        text = Aliased(resolved, text) if f.name == "stack" else resolved
    if text is None or text not in f.choices:
        hint = did_you_mean(str(raw), f.choices) if text else ""
        accepted = f.accepted() + (f"; {hint}" if hint else "")
        raise _fail(f, raw, "is not accepted", accepted)
    return int(text) if f.name in INT_CHOICES else text


def _switch(f: Field, raw: object) -> bool:
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text not in ("on", "off"):
        raise _fail(f, raw, "is not accepted")
    return text == "on"


def _text(f: Field, raw: object) -> str:
    if not isinstance(raw, str):
        raise _fail(f, raw, "is not text", "a name, e.g. " + (f.example or "abc"))
    return raw


def _list(f: Field, raw: object) -> tuple[str, ...]:
    items = raw.split(",") if isinstance(raw, str) else raw
    if not isinstance(items, (list, tuple)) or not all(isinstance(i, str) for i in items):
        raise _fail(f, raw, "is not a list of names", "names separated by commas, e.g. " + f.example)
    names = tuple(i.strip() for i in items if i.strip())
    bad = [n for n in names if f.choices and n not in f.choices]
    if bad:  # a closed vocabulary (recompute_modules): the first unknown name and the accepted set
        raise _fail(f, bad[0], f"is not one of the {f.label.lower()}", "accepted " + ", ".join(f.choices))
    return names


PARSERS: dict[str, Callable[[Field, object], Any]] = {
    "number": _number,
    "duration": _duration,
    "fraction": _fraction,
    "choice": _choice,
    "switch": _switch,
    "text": _text,
    "path": _text,
    "list": _list,
}


DEFAULT_MAX_GPUS = 1024
"""The most GPUs a plan may use when the question does not say (recommend, the wizard, the fleet planner)."""


def _whole(lo: float, hi: float) -> Bound:
    return Bound(lo, hi, integer=True)


def _positive(hi: float) -> Bound:
    return Bound(0, hi, lo_open=True)


_PARALLEL = {"tp": "tensor", "pp": "pipeline", "cp": "context", "ep": "expert", "dp": "data"}
_PARALLEL_HINTS = {
    "tp": "GPUs splitting each layer",
    "pp": "pipeline stages",
    "cp": "GPUs splitting each sequence",
    "ep": "GPUs splitting the experts (MoE)",
    "dp": "model replicas",
}
FFN_TYPES = ("gated", "plain")
"""A custom shape's feed-forward block: gated (three matrices, the default) or plain (two)."""
_SHAPE = {
    "layers": ("transformer blocks", _whole(1, 10_000), "32"),
    "hidden": ("hidden size", _whole(1, 1 << 20), "4096"),
    "heads": ("attention heads", _whole(1, 1 << 16), "32"),
    "kv_heads": ("key-value heads (grouped-query attention)", _whole(1, 1 << 16), "8"),
    "head_dim": ("width of one attention head (default hidden / heads)", _whole(1, 1 << 16), "128"),
    "ffn": ("FFN width (intermediate size; see --ffn-type)", _whole(1, 1 << 22), "14336"),
    "vocab": ("vocabulary size", _whole(1, 1 << 24), "128256"),
    "experts": ("routed experts (MoE)", _whole(1, 1 << 16), "8"),
    "experts_per_token": ("experts each token visits (MoE)", _whole(1, 1 << 16), "2"),
}


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


# The part each value fills (Field.part): the Workload, its RunConfig, the Constraints, the TCO inputs, a
# custom model's shape. Adding an input is one entry below (Field(name, kind, part, label, flag, help, ...)).
W, C, K, T, S = "workload", "config", "constraints", "tco", "spec"
_ALL_FIELDS: tuple[Field, ...] = (
    # The workload and its model.
    Field(
        "kind",
        "choice",
        W,
        "Workload",
        "--workload",
        "what to run",
        choices=WORKLOADS,
        default="finetune for catalogue LLMs, else pretrain",
    ),
    Field(
        "model",
        "text",
        W,
        "Model",
        "--model",
        "catalogue id or alias, e.g. llama-2-70b, resnet50",
        hint="a catalogue model",
        placeholder="search: llama, resnet, 70b...",
        example="llama-2-70b",
    ),
    Field(
        "params",
        "number",
        W,
        "Custom size",
        "--params",
        "a custom dense transformer of this many parameters instead of a catalogue model, e.g. 13B",
        bound=Bound(1e6, 1e14),
        hint="or a dense transformer of this many parameters",
        placeholder="e.g. 13B",
        example="13B",
    ),
    Field(
        "config",
        "path",
        "command",
        "Model config",
        "--config",
        "a Hugging Face config.json (or its folder) instead of a catalogue model",
        metavar="PATH",
        example="config.json",
    ),
    *(
        Field(n, "number", S, what.capitalize(), _flag(n), what, bound=b, example=ex)
        for n, (what, b, ex) in _SHAPE.items()
    ),
    Field(
        "ffn_type",
        "choice",
        S,
        "FFN type",
        "--ffn-type",
        "gated (SwiGLU, Llama) or plain (GPT-2/3, OPT, BLOOM)",
        choices=FFN_TYPES,
        default="gated",
        example="plain",
        metavar="TYPE",
    ),
    Field(
        "precision",
        "choice",
        W,
        "Precision",
        "--precision",
        "number format of the weights and the math",
        choices=PRECISIONS,
        default="auto: bf16 where the GPU has it, else fp16",
        hint="auto: bf16 where supported",
    ),
    Field(
        "seq_len",
        "number",
        W,
        "Sequence length",
        "--seq-len",
        "tokens per sequence",
        bound=_whole(1, 1 << 22),
        needs="transformer",
        hint="tokens per sequence",
        placeholder="default: the model's",
        example="4096",
        auto=True,
    ),
    # The data of a training job.
    Field(
        "tokens",
        "number",
        W,
        "Training tokens",
        "--tokens",
        "training tokens per epoch, e.g. 2T (LLMs)",
        bound=Bound(1, 1e16),
        applies_to=TRAINING,
        hint="per epoch; blank: a typical amount",
        placeholder="e.g. 100M, 2T",
        example="2T",
    ),
    Field(
        "samples",
        "number",
        W,
        "Samples",
        "--samples",
        "training samples per epoch (models that count images, clips or sentences)",
        bound=_whole(1, 1e13),
        applies_to=TRAINING,
        hint="per epoch",
        placeholder="e.g. 200k",
        example="200k",
    ),
    Field(
        "epochs",
        "number",
        W,
        "Epochs",
        "--epochs",
        "passes over the samples or tokens",
        bound=Bound(0, 1e4, lo_open=True),
        applies_to=TRAINING,
        hint="passes over the data",
        placeholder="1",
        default="1",
        example="3",
    ),
    Field(
        "dataset_gb",
        "number",
        W,
        "Data set (GB)",
        "--dataset-gb",
        "data set size to store, GB",
        bound=Bound(0, 1e9),
        applies_to=TRAINING,
        default="0",
        example="500",
    ),
    Field(
        "batch_size",
        "number",
        W,
        "Micro-batch",
        "--micro-batch",
        "sequences (samples) per GPU per step",
        bound=_whole(1, 1 << 24),  # recommenders (NCF) run 10M samples a GPU
        applies_to=TRAINING,
        hint="sequences per GPU per step",
        placeholder="blank: chosen",
        default="the benchmarks' batch, or the fastest that fits",
        example="4",
        auto=True,
    ),
    Field(
        "optimizer",
        "choice",
        W,
        "Optimizer",
        "--optimizer",
        "optimizer (adam8bit: adamw-8bit)",
        choices=OPTIMIZERS,
        applies_to=TRAINING,
        hint="optimizer state size",
        default="adamw",
        auto=True,
        aliases=OPTIMIZER_ALIASES,
    ),
    Field(
        "lora_rank",
        "number",
        W,
        "LoRA rank",
        "--lora-rank",
        "LoRA adapter rank",
        bound=_whole(1, 1 << 16),
        applies_to=LORA,
        hint="adapter rank",
        placeholder="blank: default",
        default="16",
        example="16",
        auto=True,
    ),
    # The load of a serving job.
    Field(
        "requests_per_s",
        "number",
        W,
        "Requests/s",
        "--requests-per-s",
        "load to serve, requests per second",
        bound=_positive(1e7),
        applies_to=INFERENCE,
        hint="peak load to serve",
        placeholder="e.g. 20",
        default="1",
        example="20",
    ),
    Field(
        "concurrency",
        "number",
        W,
        "Concurrency",
        "--concurrency",
        "requests in flight (closed loop, as bench --max-concurrency)",
        bound=_whole(1, 1 << 20),
        applies_to=INFERENCE,
        hint="requests in flight (closed loop)",
        placeholder="blank: a request rate",
        example="64",
    ),
    Field(
        "num_prompts",
        "number",
        W,
        "Prompts sent",
        "--num-prompts",
        "prompts sent: at once (a burst, as bench serve --request-rate inf), or with --concurrency through "
        "its clients (each counted)",
        bound=_whole(1, 1 << 20),
        applies_to=INFERENCE,
        hint="a finite burst, all at t=0",
        placeholder="blank: a steady load",
        example="320",
    ),
    Field(
        "prompt_tokens",
        "number",
        W,
        "Prompt tokens",
        "--prompt-tokens",
        "prompt length, tokens",
        bound=_whole(1, 1 << 22),
        applies_to=INFERENCE,
        hint="per request",
        placeholder="512",
        default="512",
        example="512",
    ),
    Field(
        "output_tokens",
        "number",
        W,
        "Output tokens",
        "--output-tokens",
        "output length, tokens",
        bound=_whole(1, 1 << 22),
        applies_to=INFERENCE,
        hint="per request",
        placeholder="256",
        default="256",
        example="256",
    ),
    Field(
        "tpot_ms",
        "number",
        W,
        "Per-token target",
        "--tpot-ms",
        "latency target per output token, ms",
        bound=_positive(1e7),
        applies_to=INFERENCE,
        hint="ms per output token (latency target)",
        placeholder="50",
        default="50",
        example="50",
    ),
    Field(
        "ttft_ms",
        "number",
        W,
        "First-token target",
        "--ttft-ms",
        "latency target to the first token, ms (optional)",
        bound=_positive(1e7),
        applies_to=INFERENCE,
        hint="ms to the first token",
        placeholder="optional",
        example="500",
    ),
    Field(
        "slo_percentile",
        "choice",
        W,
        "Latency percentile",
        "--slo-percentile",
        "the percentile of requests the latency targets hold for",
        choices=tuple(str(p) for p in SLO_PERCENTILES),
        applies_to=INFERENCE,
        hint="P50, P90 or P99 of requests",
        default="50",
    ),
    # The configuration the user runs: each value given is held; the rest is searched.
    *(
        Field(
            d,
            "number",
            C,
            f"{what.capitalize()} parallel",
            _flag(d),
            f"{what}-parallel size",
            bound=_whole(1, 65536 if d == "dp" else 1024),
            auto=True,
            hint=_PARALLEL_HINTS[d],
            placeholder="blank: chosen",
            example="8" if d in ("tp", "dp") else "2",
            applies_to=ALL if d in ("tp", "pp") else TRAINING,
            needs="" if d == "dp" else "transformer",
        )
        for d, what in _PARALLEL.items()
    ),
    Field(
        "zero",
        "choice",
        C,
        "ZeRO stage",
        "--zero",
        "ZeRO stage: 0 = DDP, 3 = FSDP full shard",
        choices=("0", "1", "2", "3"),
        applies_to=TRAINING,
        hint="0 = DDP, 3 = FSDP full shard",
        auto=True,
    ),
    Field(
        "shard_group",
        "number",
        C,
        "Shard group",
        "--shard-group",
        "hybrid sharding (HSDP): shard within groups of N ranks, replicate across",
        bound=_whole(1, 65536),
        applies_to=TRAINING,
        hint="hybrid sharding: shard within groups of this many",
        placeholder="blank: chosen",
        example="8",
        auto=True,
        metavar="N",
    ),
    Field(
        "recompute",
        "choice",
        C,
        "Recompute",
        "--recompute",
        "activation recomputation",
        choices=RECOMPUTES,
        applies_to=TRAINING,
        hint="activation recomputation",
        auto=True,
        metavar="MODE",
    ),
    Field(
        "recompute_modules",
        "list",
        C,
        "Recompute modules",
        "--recompute-modules",
        "Megatron-Core modules to recompute, e.g. layernorm,moe_act",
        choices=RECOMPUTE_MODULES,
        applies_to=TRAINING,
        needs="transformer",
        hint="Megatron-Core: modules recomputed (selective)",
        example="layernorm,moe_act",
        metavar="M",
    ),
    Field(
        "global_batch",
        "number",
        C,
        "Global batch",
        "--global-batch",
        "sequences (samples) per optimizer step",
        bound=_whole(1, 1 << 30),
        applies_to=TRAINING,
        hint="sequences per optimizer step",
        placeholder="blank: default",
        example="1024",
        auto=True,
    ),
    Field(
        "global_batch_tokens",
        "number",
        C,
        "Global batch tokens",
        "--global-batch-tokens",
        "tokens per optimizer step, e.g. 4M",
        bound=Bound(1, 1e12),
        applies_to=TRAINING,
        hint="or the global batch in tokens",
        placeholder="e.g. 4M",
        example="4M",
        auto=True,
    ),
    Field(
        "pp_schedule",
        "text",
        C,
        "Pipeline schedule",
        "--pp-schedule",
        "pipeline schedule: 1f1b or interleaved:V",
        applies_to=TRAINING,
        needs="transformer",
        hint="pipeline schedule",
        placeholder="1f1b or interleaved:2",
        example="interleaved:2",
        auto=True,
    ),
    Field(
        "master_weights",
        "switch",
        C,
        "Master weights",
        "--no-master-weights",
        "pure 16-bit: no fp32 master copy",
        choices=("on", "off"),
        applies_to=TRAINING,
        hint="an fp32 copy of the weights",
        auto=True,
    ),
    Field(
        "offload",
        "choice",
        C,
        "Offload",
        "--offload",
        "move states to host memory",
        choices=OFFLOADS,
        applies_to=TRAINING,
        hint="to host memory",
        auto=True,
    ),
    Field(
        "fused_loss",
        "choice",
        C,
        "Fused loss",
        "--fused-loss",
        "a fused or chunked loss",
        metavar="KERNEL",
        choices=FUSED_LOSSES,
        applies_to=TRAINING,
        hint="liger: Liger-Kernel's; flash-attn: FlashAttention's; chunked: torchtitan main's 8 chunks",
        default="off",
        auto=True,
    ),
    Field(
        "moe_dispatcher",
        "choice",
        C,
        "MoE dispatcher",
        "--moe-dispatcher",
        "MoE token dispatcher",
        metavar="KIND",
        choices=MOE_DISPATCHERS,
        applies_to=TRAINING,
        hint="how expert-parallel ranks exchange tokens",
        default="alltoall",
        auto=True,
    ),
    Field(
        "lora_targets",
        "choice",
        C,
        "LoRA targets",
        "--lora-targets",
        "LoRA on every linear layer or the attention projections",
        choices=LORA_TARGETS,
        applies_to=LORA,
        hint="which layers get adapters",
        auto=True,
    ),
    Field(
        "stack",
        "choice",
        C,
        "Training stack",
        "--stack",
        "training stack (decides the loss path and overhead)",
        choices=STACKS,
        applies_to=TRAINING,
        hint="its loss path and overheads",
        auto=True,
        aliases=STACK_ALIASES,
    ),
    Field(
        "engine",
        "choice",
        C,
        "Serving engine",
        "--engine",
        "serving engine",
        choices=ENGINES,
        applies_to=INFERENCE,
        hint="the serving engine",
        auto=True,
    ),
    # The serving engine's own flags, where a run sets them (priced as it ran; blank: the engine's default).
    Field(
        "max_num_seqs",
        "number",
        C,
        "Max running sequences",
        "--max-num-seqs",
        "engine's cap on running sequences",
        bound=_whole(1, 1 << 20),
        applies_to=INFERENCE,
        auto=True,
        example="256",
    ),
    Field(
        "max_batched_tokens",
        "number",
        C,
        "Tokens per iteration",
        "--max-num-batched-tokens",
        "engine's tokens per iteration",
        bound=_whole(16, 1 << 24),
        applies_to=INFERENCE,
        auto=True,
        example="8192",
    ),
    Field(
        "gpu_memory_utilization",
        "fraction",
        C,
        "Engine memory fraction",
        "--gpu-memory-utilization",
        "engine's share of GPU memory",
        bound=Bound(0, 1, lo_open=True),
        applies_to=INFERENCE,
        auto=True,
        example="0.9",
    ),
    Field(
        "prefix_cache_hit",
        "fraction",
        C,
        "Prefix cache hit",
        "--prefix-cache-hit",
        "share of each prompt already in the engine's prefix cache (not prefilled)",
        bound=Bound(0, 1),
        applies_to=INFERENCE,
        hint="a shared system prompt, or the same prompts again",
        placeholder="e.g. 0.5 or 50%",
        example="0.5",
        auto=True,
    ),
    Field(
        "request_lengths",
        "choice",
        C,
        "Request lengths",
        "--request-lengths",
        "spread of lengths",
        metavar="D",
        choices=REQUEST_LENGTHS,
        applies_to=INFERENCE,
        hint="sharegpt: a ShareGPT-like spread (bench serve --dataset-name sharegpt)",
        default="fixed",
        auto=True,
    ),
    # Calibration on the user's own runs (gpu-advisor calibrate): which profile, and the software version.
    Field(
        "profile",
        "text",
        W,
        "Calibration profile",
        "--profile",
        "calibration profile of your runs (default: GPU-stack, e.g. h100-sxm-torchtitan)",
        metavar="NAME",
        example="h100-sxm-torchtitan",
    ),
    Field(
        "stack_version",
        "text",
        W,
        "Stack version",
        "--stack-version",
        "your stack's or engine's version, e.g. 0.8.5 (warns if newer than the measured runs; "
        "serving is simulated with that engine release's scheduler defaults)",
        metavar="VERSION",
        example="0.8.5",
    ),
    # What the answer must respect.
    Field(
        "budget_usd",
        "number",
        K,
        "Budget (USD)",
        "--budget",
        "the most to spend, USD, e.g. 20000 or 20k",
        bound=_positive(1e12),
        hint="the most you want to spend",
        placeholder="e.g. 20k; blank: no limit",
        example="20k",
        metavar="USD",
    ),
    Field(
        "budget_period",
        "choice",
        K,
        "Budget per",
        "--budget-period",
        "the budget is per job or per month",
        choices=BUDGET_PERIODS,
        hint="the whole job, or each month",
        default="job",
    ),
    Field(
        "deadline_hours",
        "duration",
        K,
        "Deadline",
        "--deadline",
        "finish within: hours (72), or 3d, 2w, 1mo",
        bound=_positive(1e6),
        applies_to=TRAINING,
        hint="P90 finish time must be within it",
        placeholder="e.g. 72, 3d, 2w; blank: none",
        example="72",
        metavar="HOURS",
    ),
    Field(
        "deployment",
        "choice",
        K,
        "Deployment",
        "--deployment",
        "rent in the cloud or own (amortised TCO)",
        choices=DEPLOYMENTS,
        hint="rent in the cloud, or buy (amortised TCO)",
        default="cloud",
    ),
    Field(
        "pricing",
        "choice",
        K,
        "Pricing plan",
        "--pricing",
        "pricing plan",
        choices=PRICING_PLANS,
        needs="cloud",
        hint="spot: cheaper, may be preempted",
        default="on-demand",
    ),
    Field(
        "demand",
        "choice",
        K,
        "Demand",
        "--demand",
        "demand volatility: static 1.0x, fluctuating 1.2-1.5x, high 1.3-1.7x",
        choices=DEMANDS,
        default="static",
    ),
    Field(
        "providers",
        "list",
        K,
        "Providers",
        "--provider",
        "comma-separated providers to allow, e.g. aws,gcp,lambda",
        needs="cloud",
        hint="none ticked: all",
        example="aws,gcp",
    ),
    Field(
        "gpus",
        "list",
        K,
        "GPUs",
        "--gpu",
        "comma-separated GPU ids to allow",
        hint="none ticked: all",
        example="h100-sxm,a100-80gb-sxm",
    ),
    Field(
        "objective",
        "choice",
        K,
        "Optimise for",
        "--objective",
        "how plans are ranked",
        choices=("balanced", *(o for o in OBJECTIVES if o != "balanced")),
        hint="how plans are ranked",
        default="balanced",
    ),
    Field(
        "top",
        "number",
        K,
        "Plans shown",
        "--top",
        "how many plans to show",
        bound=_whole(1, 1000),
        default="5",
        example="5",
    ),
    Field(
        "max_gpus",
        "number",
        K,
        "Most GPUs",
        "--max-gpus",
        "the largest GPU count to consider, up to 65536",
        bound=_whole(1, 65536),
        hint="the largest count to consider",
        placeholder=f"blank: {DEFAULT_MAX_GPUS}",
        default=str(DEFAULT_MAX_GPUS),
        example="8",
        auto=True,
    ),
    Field(
        "headroom",
        "fraction",
        K,
        "Memory headroom",
        "--headroom",
        "fraction of the usable GPU memory to keep free",
        bound=Bound(0, 0.9, hi_open=True),
        hint="usable GPU memory kept free",
        placeholder="e.g. 10% or 0.1",
        default="0",
        example="0.1",
        auto=True,
    ),
    Field(
        "fabric",
        "text",
        K,
        "Fabric",
        "--fabric",
        "inter-node network for every GPU",
        default="each GPU's usual fabric",
        example="infiniband-ndr",
    ),
    Field(
        "max_price_age_months",
        "number",
        K,
        "Price age limit",
        "--max-price-age",
        "leave out cloud offers older than this many months",
        bound=Bound(0, 1200, lo_open=True),
        default="12",
        example="12",
        metavar="MONTHS",
    ),
    Field(
        "benchmark_script",
        "path",
        "command",
        "Benchmark script folder",
        "--benchmark-script",
        "write a short run of the chosen plan (calibrate reads its output) into DIR",
        metavar="DIR",
        example="bench/",
    ),
    # Owning GPUs (tco, and recommend --deployment on-prem).
    Field("gpu", "text", "command", "GPU", "--gpu", "GPU id or alias", example="h100-sxm"),
    Field(
        "count",
        "number",
        "command",
        "GPUs",
        "--count",
        "number of GPUs",
        bound=_whole(1, 100_000),
        example="8",
    ),
    Field(
        "years",
        "number",
        T,
        "Years",
        "--years",
        "amortisation period, years",
        bound=Bound(0, 10, lo_open=True),
        needs="on-prem",
        default="3",
        example="3",
    ),
    Field(
        "utilization",
        "number",
        T,
        "Utilisation",
        "--utilization",
        "average utilisation of the owned GPUs, 0-1",
        bound=Bound(0, 1, lo_open=True),
        needs="on-prem",
        default="0.75, the field guide's target",
        example="0.6",
    ),
    Field(
        "electricity_usd_kwh",
        "number",
        T,
        "Power tariff",
        "--electricity-usd-kwh",
        "power tariff, USD per kWh",
        bound=Bound(0, 100, lo_open=True),
        needs="on-prem",
        example="0.12",
    ),
    Field(
        "off_peak_usd_kwh",
        "number",
        T,
        "Off-peak tariff",
        "--off-peak-usd-kwh",
        "off-peak tariff for 22:00-08:00, USD per kWh",
        bound=Bound(0, 100, lo_open=True),
        example="0.08",
    ),
    Field(
        "pue",
        "number",
        T,
        "PUE",
        "--pue",
        "data-centre power usage effectiveness",
        bound=Bound(1, 3),
        default="1.58, Uptime Institute 2023 average",
        example="1.3",
    ),
    Field(
        "staff_usd_year",
        "number",
        T,
        "Operations per year",
        "--staff-usd-year",
        "operations (staff and maintenance) cost per year for this cluster",
        bound=Bound(0, 1e9),
        default="the guide's 15% of the amortised hardware cost",
        example="200k",
    ),
    Field(
        "gpu_hours_per_month",
        "number",
        T,
        "GPU-hours per month",
        "--gpu-hours-per-month",
        "your predicted GPU-hours per month",
        bound=_positive(1e9),
        default="utilisation x hours",
        example="5000",
    ),
    # The field guide's cost formula (`cost`): prices and amounts, never negative.
    Field(
        "gpu_usd_hour",
        "number",
        "cost",
        "GPU price",
        "--gpu-usd-hour",
        "price of one GPU-hour, USD",
        bound=_positive(1e6),
        example="2.5",
    ),
    Field(
        "cost_gpus", "number", "cost", "GPUs", "--gpus", "number of GPUs", bound=_whole(1, 1e7), example="8"
    ),
    Field("hours", "number", "cost", "Hours", "--hours", "hours of use", bound=_positive(1e6), example="72"),
    Field(
        "volatility",
        "number",
        "cost",
        "Demand multiplier",
        "--volatility",
        "your own demand multiplier instead of the demand level's",
        bound=Bound(1, 10),
        example="1.3",
    ),
    Field(
        "storage_gb",
        "number",
        "cost",
        "Storage (GB)",
        "--storage-gb",
        "data kept in storage, GB",
        bound=Bound(0, 1e12),
        default="0",
        example="500",
    ),
    Field(
        "storage_months",
        "number",
        "cost",
        "Storage months",
        "--storage-months",
        "months it is kept",
        bound=Bound(0, 1200),
        default="the hours, in months",
        example="3",
    ),
    Field(
        "storage_usd_gb_month",
        "number",
        "cost",
        "Storage price",
        "--storage-usd-gb-month",
        "storage price, USD per GB-month",
        bound=Bound(0, 1e3),
        default="the provider's sourced price",
        example="0.023",
    ),
    Field(
        "provider",
        "text",
        "cost",
        "Provider",
        "--provider",
        "provider whose storage price to use",
        default="aws",
        example="aws",
    ),
    Field(
        "storage_kind",
        "choice",
        "cost",
        "Storage kind",
        "--storage-kind",
        "object or block storage",
        choices=("object", "block"),
        default="object",
    ),
)


FIELDS: dict[str, Field] = {f.name: f for f in _ALL_FIELDS}
"""Every input by name (the name is the question records' field name)."""


def flag_of(name: str) -> str:
    """The CLI flag of an input, by field name (the name with dashes when it is not a registry field)."""
    f = FIELDS.get(name)
    return f.flag if f is not None else _flag(name)


def label_of(name: str) -> str:
    """The UI's label of an input, by field name (the name in words when it is not a registry field)."""
    f = FIELDS.get(name)
    return f.label if f is not None else name.replace("_", " ")


def of_part(part: str) -> tuple[str, ...]:
    """The names of the fields that fill one part (workload, config, constraints, spec, tco, cost)."""
    return tuple(n for n, f in FIELDS.items() if f.part == part)


def serving_load() -> tuple[str, ...]:
    """The workload fields only serving uses (load, lengths, latency targets), in registry order: a new one
    appears in the CLI's serving group and the wizard's model step from its registry entry alone."""
    return tuple(n for n in of_part("workload") if FIELDS[n].applies_to == INFERENCE)


class Limits(TypedDict, total=False):
    """A bound as pydantic's constraint keywords."""

    gt: float
    ge: float
    lt: float
    le: float


def limits(name: str) -> Limits:
    """A field's bound as pydantic's constraint keywords (ge/gt, le/lt): a model at another door (the fleet's
    portfolio) holds the same value to the same range without a second copy of it."""
    bound = FIELDS[name].bound
    out = Limits()
    if bound is not None:
        out["gt" if bound.lo_open else "ge"] = bound.lo
        out["lt" if bound.hi_open else "le"] = bound.hi
    return out


def check(name: str, value: object) -> Any:
    """value of a named field held to its kind and bound (a number from a file, or text); InputError."""
    return FIELDS[name].parse(value)


def default_of(name: str) -> Any:
    """A field's default as a value (its registry text parsed): the records' defaults read it, so it is
    stated once."""
    f = FIELDS[name]
    return f.parse(f.default)


def check_values(data: Mapping[str, object]) -> dict[str, object]:
    """data with every registry field's value checked (others pass through for the model to judge)."""
    out = dict(data)
    for key, value in data.items():
        f = FIELDS.get(key)
        if f is not None and value is not None and f.kind not in ("text", "path"):
            out[key] = f.parse(value)
            if out[key] is None:  # 'auto': the model's default applies
                del out[key]
    return out


def inapplicable(
    given: Iterable[str],
    kind: str | None,
    deployment: str | None = None,
    values: Mapping[str, object] | None = None,
) -> InputError | None:
    """A structured refusal of the first given field that the workload kind (None: training) or the
    deployment would ignore, or None when every one applies."""
    for name in given:
        f = FIELDS.get(name)
        if f is None or f.applies(kind, deployment):
            continue
        value = (values or {}).get(name)
        if not f.applies(kind):
            used_by = KIND_WORDS.get(f.applies_to, ", ".join(sorted(f.applies_to)))
            problem = f"is not used by {kind or 'training'}"
            accepted = f"used only by {used_by}; leave it out"
        else:
            problem = f"is not used with {deployment} deployment"
            accepted = f"used only with {f.needs} deployment; leave it out"
        return InputError(field=name, value=value, problem=problem, accepted=accepted)
    return None
