"""Provides the training stacks of knowledge/training_stacks.toml: the layouts each runs, its default
recomputation and its dated traits (FlashAttention, compiled or fused kernels, Transformer Engine FP8, a
Megatron-style runtime)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from advisor.catalog.common import shipped_root
from advisor.question.errors import KnowledgeError
from advisor.question.records import Check, PosFloat, validate

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

    from advisor.catalog.loader import Knowledge

FILE = "training_stacks.toml"
DIMENSIONS = ("tp", "pp", "cp", "ep")
TRAITS = ("flash_attention", "compiled", "te_fp8", "megatron_runtime")
# A stack the table does not name (a user's calibration row, say) reads as eager PyTorch, data parallel.
UNKNOWN = "fsdp"

Dimension = Literal["tp", "pp", "cp", "ep"]
Month = Annotated[str, Check(pattern=r"^(\d{4}-\d{2})?$")]


@functools.cache
def _schema() -> Any:
    """The schema of one [stacks.<id>] table (pydantic: built only on a cache miss)."""

    @dataclass(frozen=True, slots=True, kw_only=True, repr=False)
    class _StackSchema:
        """One [stacks.<id>] table, validated."""

        label: str
        data_only: bool = False
        runs_as: str = ""
        search: list[Dimension]
        stated: list[Dimension]
        zero: list[int]
        zero_stated: list[int]
        recompute: Literal["search", "none", "selective", "full"]
        recompute_full_from_params: PosFloat | None = None
        recompute_open_from_params: PosFloat | None = None
        interleaved: bool = False
        reduce_fp32: bool = False
        optimizer_foreach: bool = False
        sequence_parallel: bool = False
        flash_attention: Month
        compiled: Month
        te_fp8: Month
        megatron_runtime: Month
        sources: list[str]
        note: str

    return _StackSchema


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class Stack:
    """What one training stack runs and does."""

    id: str
    label: str
    data_only: bool
    runs_as: str
    """A stack of the measured runs only: the `--stack` whose traits a question naming it is answered with
    ('' for the stacks a question can name)."""
    search: frozenset[str]
    """Model-parallel dimensions the search may choose."""
    stated: frozenset[str]
    """Further dimensions accepted only when the user states them."""
    zero: tuple[int, ...]
    zero_stated: tuple[int, ...]
    recompute: str
    recompute_full_from_params: float | None
    recompute_open_from_params: float | None
    """From this model size up to recompute_full_from_params the stack's public runs split between no and full
    recomputation: a plan whose recipe the user left open is answered between the two (job/data.py
    open_recompute)."""
    interleaved: bool
    """Whether the stack runs an interleaved 1F1B pipeline (v model chunks per stage), so that the search
    chooses v where the user does not state a schedule."""
    reduce_fp32: bool
    """Whether the stack reduces (reduce-scatters, all-reduces) the gradients in fp32 beside 16-bit weights
    by default, so its data-parallel reduction moves 4 bytes a gradient, not 2."""
    optimizer_foreach: bool
    """Whether the stack's AdamW is PyTorch's as constructed (no fused=True), which PyTorch runs as its
    foreach implementation: 20 element passes a step where the fused kernel makes 7."""
    sequence_parallel: bool
    """Whether the stack's tensor parallelism splits the norms and residual adds over the TP ranks by sequence
    (an all-gather before each column-parallel block, a reduce-scatter after each row-parallel one) beside
    its Megatron-style runtime trait, which implies it."""
    since: dict[str, str]
    """Trait -> the month ('YYYY-MM') it arrived in this stack, '' when it never did."""
    note: str

    def runs(self, dimension: str) -> bool:
        """Whether the stack can run this model-parallel dimension at all (searched or stated)."""
        return dimension in self.search or dimension in self.stated

    def runs_zero(self, stage: int) -> bool:
        """Whether the stack can run this ZeRO stage (0 = DDP) when it is stated."""
        return stage in self.zero or stage in self.zero_stated

    def traits(self, month: str | None = None) -> tuple[float, float, float, float]:
        """(FlashAttention, compiled or fused kernels, Transformer Engine FP8, Megatron-style runtime) as of a
        month ('YYYY-MM'; None = today)."""
        return tuple(  # type: ignore[return-value]
            1.0 if self.since[t] and (month is None or self.since[t] <= month) else 0.0 for t in TRAITS
        )

    def default_recompute(self, params: float) -> str:
        """The recomputation the stack's recipes use for a model of this size ('search': the search picks)."""
        if self.recompute_full_from_params is not None and params >= self.recompute_full_from_params:
            return "full"
        return self.recompute

    def recompute_open(self, params: float) -> bool:
        """Whether public runs of this stack at this model size split between no and full recomputation."""
        low, high = self.recompute_open_from_params, self.recompute_full_from_params
        return low is not None and params >= low and (high is None or params < high)


def parse_stacks(raw: dict, name: str = f"knowledge/{FILE}") -> dict[str, Stack]:
    """Validate the parsed file; KnowledgeError names the stack and the field."""
    known_sources = set(raw.get("sources", {}))
    out: dict[str, Stack] = {}
    for key, table in raw.get("stacks", {}).items():
        from pydantic import ValidationError

        try:
            spec = validate(_schema(), table)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"])
            raise KnowledgeError(f"{name}: stacks.{key}.{where}: {err['msg']}") from exc
        missing = [s for s in spec.sources if s not in known_sources]
        if missing:
            raise KnowledgeError(f"{name}: stacks.{key}: unknown source {missing[0]!r}")
        out[key] = Stack(
            id=key,
            label=spec.label,
            data_only=spec.data_only,
            runs_as=spec.runs_as,
            search=frozenset(spec.search),
            stated=frozenset(spec.stated),
            zero=tuple(spec.zero),
            zero_stated=tuple(spec.zero_stated),
            recompute=spec.recompute,
            recompute_full_from_params=spec.recompute_full_from_params,
            recompute_open_from_params=spec.recompute_open_from_params,
            interleaved=spec.interleaved,
            reduce_fp32=spec.reduce_fp32,
            optimizer_foreach=spec.optimizer_foreach,
            sequence_parallel=spec.sequence_parallel,
            since={t: getattr(spec, t) for t in TRAITS},
            note=spec.note,
        )
    if UNKNOWN not in out:
        raise KnowledgeError(f"{name}: the default stack {UNKNOWN!r} is missing")
    for key, stack in out.items():
        target = out.get(stack.runs_as)
        if stack.data_only != bool(stack.runs_as) or (stack.runs_as and (target is None or target.data_only)):
            raise KnowledgeError(
                f"{name}: stacks.{key}.runs_as: {stack.runs_as!r}; a data-only stack names a --stack stack, "
                "every other none"
            )
    return out


def read_stacks(root: Traversable | Path) -> dict[str, Stack]:
    """The stacks below a knowledge root; a root without the file (a test fixture) reads the shipped one.

    Validated once per file version and cached as plain fields, as the other knowledge files are: a run with a
    warm cache imports neither tomllib nor pydantic for them."""
    from advisor.catalog.loader import cached_records

    if not root.joinpath(FILE).is_file():
        root = shipped_root()
    tables = cached_records(root, FILE, lambda raw: {k: _fields(s) for k, s in parse_stacks(raw).items()})
    return {key: _stack(table) for key, table in tables.items()}


def _fields(stack: Stack) -> dict[str, object]:
    """A stack as JSON-ready fields (sets as sorted lists)."""
    out = {name: getattr(stack, name) for name in Stack.__slots__}
    return out | {k: sorted(out[k]) for k in ("search", "stated")}


def _stack(table: dict) -> Stack:
    return Stack(**table | {k: frozenset(table[k]) for k in ("search", "stated")})


@functools.lru_cache(maxsize=4)
def _stacks_of(root: str) -> dict[str, Stack]:
    return read_stacks(Path(root))


def stacks_of(knowledge: Knowledge) -> dict[str, Stack]:
    """The training stacks of a knowledge base (read once, on first use)."""
    root = knowledge.root
    if isinstance(root, Path):
        return _stacks_of(str(root))
    return read_stacks(root)


def stack_of(knowledge: Knowledge, stack_id: str) -> Stack:
    """One stack by id; a stack the table does not name reads as the default PyTorch FSDP stack."""
    stacks = stacks_of(knowledge)
    return stacks.get(stack_id) or stacks[UNKNOWN]


@functools.lru_cache(maxsize=1)
def shipped_stacks() -> dict[str, Stack]:
    """The stacks of the shipped knowledge (what a stack can run does not depend on a user's catalogue)."""
    return read_stacks(shipped_root())
