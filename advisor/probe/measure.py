"""Provides measure(): runs a probe plan against a timing backend (PyTorch on a GPU, or a fake one in tests)
and turns the median of each case's repeats into rows in the columns of knowledge/operations/*.csv."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from advisor.probe.plan import (
    ATTENTION_NOTE,
    AttentionCase,
    CollectiveCase,
    GemmCase,
    Plan,
    busbw_gbs,
    copy_gbs,
    split_bytes,
    tflops,
)


@dataclass(frozen=True, slots=True, repr=False)
class Timing:
    """Seconds per call, one figure per timed repeat, and how they were taken."""

    seconds: tuple[float, ...]
    note: str = ""


@dataclass(frozen=True, slots=True, repr=False)
class DeviceInfo:
    """What the probe records about the node before it measures."""

    name: str
    count: int
    memory_bytes: int
    arch: str
    vendor: str
    torch: str
    cuda: str
    topology: str
    """'nvlink' or 'pcie' as `nvidia-smi topo -m` shows GPU0's peers; '' when it cannot say."""


class Backend(Protocol):
    """What measure() needs from a timing backend; each method raises on a case the GPU cannot run."""

    def supports_fp8(self) -> bool: ...

    def time_gemm(self, case: GemmCase, warmup: int, repeats: int) -> Timing: ...

    def attention_kernels(self, case: AttentionCase) -> list[tuple[str, str]]:
        """(kernel key, note) of each attention backend this torch build has, in the order to try them."""
        ...

    def time_attention(
        self, case: AttentionCase, kernel: str, pass_: str, warmup: int, repeats: int
    ) -> Timing: ...

    def time_copy(self, nbytes: int, warmup: int, repeats: int) -> Timing: ...

    def time_collectives(
        self, cases: Sequence[CollectiveCase], ranks: int, warmup: int, repeats: int, timeout_s: float
    ) -> dict[CollectiveCase, Timing]:
        """Every case timed across `ranks` GPUs (a case left out: not measured in time)."""
        ...


@dataclass(slots=True, repr=False)
class Run:
    """One probe run's settings and what it has found so far."""

    plan: Plan
    gpu: str
    link: str
    ranks: int
    source: str
    measured_on: str
    clock: Callable[[], float]
    deadline: float
    say: Callable[[str], None] = lambda line: None
    rows: dict[str, list[dict[str, Any]]] = field(
        default_factory=lambda: {"gemm": [], "attention": [], "memory": [], "collectives": []}
    )
    notes: list[str] = field(default_factory=list)

    def left(self) -> float:
        """Seconds left before the deadline."""
        return self.deadline - self.clock()

    def add(self, section: str, note: str, **cells: Any) -> None:
        """One row, with the run's provenance columns."""
        row = {"gpu": self.gpu, **cells} if section != "collectives" else dict(cells)
        row.update(source=self.source, measured_on=self.measured_on, note=note)
        self.rows[section].append(row)


def figure(value: float) -> float:
    """A measured figure as stored: six significant digits (the repeats' spread is far wider)."""
    return float(f"{value:.6g}")


def median_seconds(timing: Timing) -> float:
    """The median repeat; ValueError for no repeats or a time that is not positive."""
    if not timing.seconds or min(timing.seconds) <= 0:
        raise ValueError(f"bad timing {timing.seconds!r}")
    return float(statistics.median(timing.seconds))


def _how(run: Run, timing: Timing) -> str:
    return "; ".join(p for p in (f"median of {len(timing.seconds)} repeats", timing.note) if p)


def _skip(run: Run, what: str, error: BaseException) -> None:
    first = (str(error).strip().splitlines() or [type(error).__name__])[0][:160]
    run.notes.append(f"{what}: not measured ({type(error).__name__}: {first})")


def _out_of_time(run: Run, section: str, left: int, total: int) -> bool:
    if run.left() > 0:
        return False
    run.notes.append(f"{section}: {left} of {total} cases not timed: the time budget ran out")
    return True


def gemm_rows(backend: Backend, run: Run) -> None:
    """Time each GEMM of the plan; a dtype that fails once (fp8 on a build without it) is dropped."""
    failed: set[str] = set()
    cases = run.plan.gemm
    for i, case in enumerate(cases):
        if _out_of_time(run, "gemm", len(cases) - i, len(cases)):
            return
        if case.dtype in failed:
            continue
        try:
            timing = backend.time_gemm(case, run.plan.warmup, run.plan.repeats)
            value = tflops(case.flops(), median_seconds(timing))
        except Exception as exc:  # noqa: BLE001 - a kernel this GPU or torch build lacks is a note, not the end
            failed.add(case.dtype)
            _skip(run, f"gemm {case.dtype}", exc)
            continue
        run.add(
            "gemm", _how(run, timing), dtype=case.dtype, m=case.m, n=case.n, k=case.k, tflops=figure(value)
        )
    run.say(f"gemm: {len(run.rows['gemm'])} shapes timed")


def _attention_row(run: Run, case: AttentionCase, kernel: str, pass_: str, seconds: float, note: str) -> None:
    run.add(
        "attention",
        f"{note}; {ATTENTION_NOTE}",
        dtype=case.dtype,
        kernel=kernel,
        **{"pass": pass_},
        causal=case.causal,
        batch=case.batch,
        seq_len=case.seq_len,
        heads=case.heads,
        kv_heads=case.kv_heads,
        head_dim=case.head_dim,
        tflops=figure(tflops(case.flops(pass_), seconds)),
    )


def _attention_case(backend: Backend, run: Run, case: AttentionCase, kernel: str, why: str) -> None:
    """fwd and fwd_bwd timed; bwd is their difference (said so in its note)."""
    plan = run.plan
    times: dict[str, float] = {}
    for pass_ in ("fwd", "fwd_bwd"):
        timing = backend.time_attention(case, kernel, pass_, plan.warmup, plan.repeats)
        times[pass_] = median_seconds(timing)
        _attention_row(run, case, kernel, pass_, times[pass_], f"{why}; {_how(run, timing)}")
    backward = times["fwd_bwd"] - times["fwd"]
    if backward > 0:
        _attention_row(run, case, kernel, "bwd", backward, f"{why}; bwd = fwd_bwd time - fwd time")


def attention_rows(backend: Backend, run: Run) -> None:
    """Time each attention case with the SDPA backends that run it (all of them, or the first)."""
    cases = run.plan.attention
    for i, case in enumerate(cases):
        if _out_of_time(run, "attention", len(cases) - i, len(cases)):
            return
        label = f"attention s={case.seq_len} d={case.head_dim} causal={case.causal}"
        try:
            kernels = backend.attention_kernels(case)
        except Exception as exc:  # noqa: BLE001 - no attention kernel for this case is a note
            _skip(run, label, exc)
            continue
        timed = 0
        for kernel, why in kernels:
            try:
                _attention_case(backend, run, case, kernel, why)
            except Exception as exc:  # noqa: BLE001 - one backend failing leaves the others measured
                _skip(run, f"{label} {kernel}", exc)
                continue
            timed += 1
            if not run.plan.all_kernels:
                break
        if not timed:
            run.notes.append(f"{label}: no SDPA backend ran it")
    run.say(f"attention: {len(run.rows['attention'])} rows")


def memory_rows(backend: Backend, run: Run) -> None:
    """Time a device-to-device copy of each size."""
    for nbytes in run.plan.copy_bytes:
        try:
            timing = backend.time_copy(nbytes, run.plan.warmup, run.plan.repeats)
            value = copy_gbs(nbytes, median_seconds(timing))
        except Exception as exc:  # noqa: BLE001 - a size that does not fit is a note
            _skip(run, f"copy of {nbytes} bytes", exc)
            continue
        note = f"device copy, bytes read + written per second; {_how(run, timing)}"
        run.add("memory", note, op="copy", nbytes=nbytes, gbs=figure(value))
    run.say(f"memory: {len(run.rows['memory'])} copy sizes timed")


def collective_rows(backend: Backend, run: Run) -> None:
    """Time the plan's collectives across the node's GPUs (one GPU: none, with a note)."""
    if run.ranks < 2:
        run.notes.append("collectives: one GPU, so none measured (they need two or more)")
        return
    # S rounded so every rank's share is whole float32 elements (a 3- or 6-GPU node); rows say the S timed.
    cases = tuple(
        dict.fromkeys(CollectiveCase(c.op, split_bytes(c.nbytes, run.ranks)) for c in run.plan.collectives)
    )
    timeout = max(run.left(), 1.0)
    try:
        timed = backend.time_collectives(cases, run.ranks, run.plan.warmup, run.plan.repeats, timeout)
    except Exception as exc:  # noqa: BLE001 - NCCL failing on this node leaves the rest of the table
        _skip(run, f"collectives on {run.ranks} GPUs", exc)
        return
    for case in cases:
        timing = timed.get(case)
        if timing is None:
            continue
        seconds = median_seconds(timing)
        note = f"nccl-tests busbw; float32; {_how(run, timing)}"
        cells = dict(op=case.op, link=run.link, gpus=run.ranks, nodes=1, nbytes=case.nbytes)
        run.add(
            "collectives",
            note,
            **cells,
            busbw_gbs=figure(busbw_gbs(case.op, case.nbytes, run.ranks, seconds)),
        )
    missing = len(cases) - len(run.rows["collectives"])
    if missing:
        run.notes.append(f"collectives: {missing} of {len(cases)} cases not timed within {timeout:.0f} s")
    run.say(f"collectives: {len(run.rows['collectives'])} timed on {run.ranks} GPUs")


def measure(backend: Backend, run: Run, collective_share: float = 0.35) -> Run:
    """Every section in turn (copies, GEMMs, attention, then collectives, which keep `collective_share` of
    the time left at the start for themselves when there are two or more GPUs)."""
    reserve = (run.deadline - run.clock()) * collective_share if run.ranks > 1 else 0.0
    run.deadline -= reserve
    memory_rows(backend, run)
    gemm_rows(backend, run)
    attention_rows(backend, run)
    run.deadline += reserve
    collective_rows(backend, run)
    return run
