"""Provides spawn_ranks() and run_rank(): the probe's collectives, one spawned process per GPU timing NCCL
(RCCL on ROCm) operations through torch.distributed, as nccl-tests times them."""

from __future__ import annotations

import importlib
import json
import os
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

MIB = 1 << 20


def calls_per_repeat(nbytes: int) -> int:
    """Calls timed together in one repeat: the same on every rank (a rank doing one call more would hang the
    others), enough that small messages are not timed one launch at a time."""
    return 20 if nbytes <= 16 * MIB else 5 if nbytes <= 256 * MIB else 2


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def spawn_ranks(torch: Any, ranks: int, spec: Path, out: Path, deadline: float) -> None:
    """Run run_rank on `ranks` processes; stop them at the monotonic `deadline` (what rank 0 wrote by then
    stays in `out`). A rank that fails raises its error here."""
    multiprocessing = torch.multiprocessing
    context = multiprocessing.start_processes(
        run_rank,
        args=(ranks, _free_port(), str(spec), str(out)),
        nprocs=ranks,
        join=False,
        start_method="spawn",
    )
    try:
        while not context.join(timeout=1.0):
            if time.monotonic() > deadline:
                break
    finally:
        for process in context.processes:
            if process.is_alive():
                process.terminate()
        for process in context.processes:
            process.join(5)


def _operation(torch: Any, dist: Any, op: str, nbytes: int, rank: int, world: int) -> Callable[[], object]:
    """One call of op on float32 buffers sized as nccl-tests sizes S (see advisor/probe/plan.py)."""
    dev = torch.device("cuda", rank)
    count = nbytes // 4

    def buf(n: int) -> Any:
        return torch.zeros(n, device=dev, dtype=torch.float32)

    if op == "all_reduce":
        whole = buf(count)
        return lambda: dist.all_reduce(whole)
    if op == "all_gather":
        part, whole = buf(count // world), buf(count)
        return lambda: dist.all_gather_into_tensor(whole, part)
    if op == "reduce_scatter":
        part, whole = buf(count // world), buf(count)
        return lambda: dist.reduce_scatter_tensor(part, whole)
    if op == "all_to_all":
        send, recv = buf(count), buf(count)
        return lambda: dist.all_to_all_single(recv, send)
    if (
        op == "send_recv"
    ):  # a ring, as nccl-tests' sendrecv_perf: send to the next rank, receive from the last
        send, recv = buf(count), buf(count)
        ops = [
            dist.P2POp(dist.isend, send, (rank + 1) % world),
            dist.P2POp(dist.irecv, recv, (rank - 1) % world),
        ]
        return lambda: [r.wait() for r in dist.batch_isend_irecv(ops)]
    raise ValueError(f"unknown collective {op!r}")


def _time(
    torch: Any, dist: Any, call: Callable[[], object], nbytes: int, spec: dict[str, Any]
) -> list[float]:
    """Seconds per call of each repeat, averaged over the ranks (nccl-tests' default, -a 1)."""
    cuda = torch.cuda
    for _ in range(max(1, int(spec["warmup"]))):
        call()
    cuda.synchronize()
    calls = calls_per_repeat(nbytes)
    start, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
    seconds = []
    for _ in range(int(spec["repeats"])):
        start.record()
        for _ in range(calls):
            call()
        end.record()
        end.synchronize()
        seconds.append(start.elapsed_time(end) / 1e3 / calls)
    together = torch.tensor(seconds, device=torch.device("cuda", torch.cuda.current_device()))
    dist.all_reduce(together)
    return [float(s) / dist.get_world_size() for s in together.tolist()]


def run_rank(rank: int, world: int, port: int, spec_file: str, out_file: str) -> None:
    """One rank: join the process group, time every case in spec_file; rank 0 rewrites out_file after each
    case, so a run stopped at the deadline keeps what it measured."""
    torch = importlib.import_module("torch")
    dist = importlib.import_module("torch.distributed")
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    spec = json.loads(Path(spec_file).read_text())
    found: dict[str, list[float]] = {}
    try:
        for op, nbytes in spec["cases"]:
            times = _time(
                torch, dist, _operation(torch, dist, op, int(nbytes), rank, world), int(nbytes), spec
            )
            if rank == 0:
                found[f"{op}:{nbytes}"] = times
                tmp = Path(f"{out_file}.tmp")
                tmp.write_text(json.dumps(found))
                os.replace(tmp, out_file)
            torch.cuda.empty_cache()
    finally:
        dist.destroy_process_group()
