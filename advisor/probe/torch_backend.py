"""Provides open_backend(): the probe's timing backend on this machine's GPUs with PyTorch (CUDA or ROCm),
timing with CUDA events after a warm-up; torch is imported here, on the call, never at module import."""

from __future__ import annotations

import importlib
import json
import math
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from advisor.probe.measure import DeviceInfo, Timing
from advisor.probe.plan import AttentionCase, CollectiveCase, GemmCase
from advisor.question.errors import InputError

INSTALL = "pip install 'gpu-advisor[probe]' (or the torch build for your CUDA or ROCm from pytorch.org)"
# Each timed repeat runs the call enough times to last this long: CUDA events resolve about 0.5 us and a
# launch costs a few, so a 20 us GEMM timed alone would be mostly overhead.
MIN_REPEAT_S = 2e-3
MAX_CALLS = 1000


def import_torch() -> Any:
    """torch, or InputError (one line, what to install) when it is not installed."""
    try:
        return importlib.import_module("torch")
    except ImportError as exc:
        raise InputError(
            f"PyTorch is not installed ({exc.name or 'torch'}), and the probe measures with it on a GPU; "
            f"install it with {INSTALL}"
        ) from None
    except OSError as exc:  # a torch whose CUDA libraries do not load (a driver or library mismatch)
        raise InputError(
            f"PyTorch is installed but does not load ({exc}); reinstall it with {INSTALL}"
        ) from None


def open_backend() -> TorchBackend:
    """The backend on GPU 0 (and its peers for collectives); InputError without torch or without a GPU."""
    torch = import_torch()
    version = str(getattr(torch, "__version__", "?"))
    cuda = getattr(torch, "cuda", None)
    if cuda is None or not cuda.is_available() or cuda.device_count() < 1:
        build = getattr(torch, "version", None)
        cpu_only = build is not None and not getattr(build, "cuda", None) and not getattr(build, "hip", None)
        raise InputError(
            f"no GPU visible to PyTorch {version} (torch.cuda.is_available() is False"
            + ("; this is a CPU-only build of torch" if cpu_only else "")
            + f"): run the probe on a machine with an NVIDIA or AMD GPU and its driver, with {INSTALL}"
        )
    return TorchBackend(torch)


def _topology(count: int) -> str:
    """'nvlink' when GPU0 reaches a peer over NVLink in `nvidia-smi topo -m`, 'pcie' when only over PCIe."""
    if count < 2:
        return ""
    try:
        out = subprocess.run(["nvidia-smi", "topo", "-m"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
    for line in out.splitlines():
        cells = line.split()
        if cells and cells[0].endswith("GPU0"):
            peers = cells[1 : count + 1]
            if any(c.startswith("NV") for c in peers):
                return "nvlink"
            if any(c in ("PIX", "PXB", "PHB", "NODE", "SYS") for c in peers):
                return "pcie"
    return ""


class TorchBackend:
    """Timings of GEMMs, SDPA, copies and NCCL collectives with PyTorch on this node's GPUs."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch
        self.device = torch.device("cuda", 0)
        self._sdpa: dict[str, Any] = {}
        props = torch.cuda.get_device_properties(0)
        hip = getattr(torch.version, "hip", None)
        arch = getattr(props, "gcnArchName", "") if hip else f"sm_{props.major}{props.minor}"
        count = torch.cuda.device_count()
        self.info = DeviceInfo(
            name=str(torch.cuda.get_device_name(0)),
            count=count,
            memory_bytes=int(props.total_memory),
            arch=str(arch),
            vendor="amd" if hip else "nvidia",
            torch=str(torch.__version__),
            cuda=f"hip {hip}" if hip else str(torch.version.cuda or ""),
            topology="xgmi" if hip and count > 1 else _topology(count),
        )

    # --- timing -------------------------------------------------------------------------------------------
    def _time(self, call: Callable[[], object], warmup: int, repeats: int) -> tuple[float, ...]:
        """Seconds per call of each repeat: CUDA events around a batch of calls, after warm-up calls."""
        cuda = self.torch.cuda
        for _ in range(max(1, warmup)):
            call()
        cuda.synchronize()
        start, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
        start.record()
        call()
        end.record()
        end.synchronize()
        single = max(start.elapsed_time(end) / 1e3, 1e-7)
        calls = int(min(MAX_CALLS, max(1, math.ceil(MIN_REPEAT_S / single))))
        out = []
        for _ in range(repeats):
            start.record()
            for _ in range(calls):
                call()
            end.record()
            end.synchronize()
            out.append(start.elapsed_time(end) / 1e3 / calls)
        return tuple(out)

    def supports_fp8(self) -> bool:
        """Whether torch._scaled_mm runs here (Ada, Hopper, Blackwell; MI300 on ROCm)."""
        try:
            self.time_gemm(GemmCase("fp8", 32, 32, 32), 1, 1)
        except Exception:  # noqa: BLE001 - any failure of the fp8 path means no fp8 rows, never a crash
            return False
        return True

    def _fp8(self) -> Any:
        # MI300 (gfx942) runs the 'fnuz' variant of e4m3; NVIDIA and later AMD parts the OCP one.
        torch = self.torch
        return torch.float8_e4m3fnuz if "gfx942" in self.info.arch else torch.float8_e4m3fn

    def time_gemm(self, case: GemmCase, warmup: int, repeats: int) -> Timing:
        """C[m,n] = A[m,k] B[k,n] by torch.matmul, or by torch._scaled_mm for fp8 (per-tensor scales 1,
        bf16 output; B column-major, as the kernel requires)."""
        torch = self.torch
        dev, m, n, k = self.device, case.m, case.n, case.k
        if case.dtype == "fp8":
            a = torch.randn(m, k, device=dev, dtype=torch.bfloat16).to(self._fp8())
            bt = torch.randn(n, k, device=dev, dtype=torch.bfloat16).to(self._fp8())
            one = torch.ones((), device=dev, dtype=torch.float32)

            def call() -> object:
                return torch._scaled_mm(a, bt.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)

            note = "torch._scaled_mm e4m3, per-tensor scales, bf16 output, fast accumulation off"
        else:
            dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[case.dtype]
            a = torch.randn(m, k, device=dev, dtype=dtype)
            b = torch.randn(k, n, device=dev, dtype=dtype)
            c = torch.empty(m, n, device=dev, dtype=dtype)

            def call() -> object:
                return torch.matmul(a, b, out=c)

            note = "torch.matmul"
        return Timing(self._time(call, warmup, repeats), f"{note}; CUDA events")

    def attention_kernels(self, case: AttentionCase) -> list[tuple[str, str]]:
        """torch SDPA's fused backends in this build, each forced alone so the row names the one that ran."""
        from_attention = importlib.import_module("torch.nn.attention")
        backend = from_attention.SDPBackend
        hip = self.info.vendor == "amd"
        wanted = (
            ("FLASH_ATTENTION", "triton" if hip else "fa2", "torch SDPA flash backend"),
            ("CUDNN_ATTENTION", "cudnn", "torch SDPA cuDNN backend"),
            ("EFFICIENT_ATTENTION", "sdpa", "torch SDPA memory-efficient backend"),
        )
        self._sdpa = {key: getattr(backend, name) for name, key, _ in wanted if hasattr(backend, name)}
        flash = " (AOTriton on ROCm)" if hip else " (FlashAttention-2 kernels built into torch)"
        return [
            (key, note + (flash if name == "FLASH_ATTENTION" else ""))
            for name, key, note in wanted
            if key in self._sdpa
        ]

    def time_attention(
        self, case: AttentionCase, kernel: str, pass_: str, warmup: int, repeats: int
    ) -> Timing:
        """F.scaled_dot_product_attention on (batch, heads, seq, head_dim) bf16 tensors with only `kernel`'s
        backend allowed; fwd_bwd runs forward then backward (gradients dropped between calls)."""
        torch = self.torch
        functional = importlib.import_module("torch.nn.functional")
        sdpa_kernel = importlib.import_module("torch.nn.attention").sdpa_kernel
        dev, grad = self.device, pass_ == "fwd_bwd"
        # torch 2.5+ broadcasts fewer KV heads itself when asked; MHA calls pass nothing new.
        gqa = {"enable_gqa": True} if case.kv_heads != case.heads else {}
        shape = (case.batch, case.heads, case.seq_len, case.head_dim)
        kv = (case.batch, case.kv_heads, case.seq_len, case.head_dim)
        q = torch.randn(*shape, device=dev, dtype=torch.bfloat16, requires_grad=grad)
        k = torch.randn(*kv, device=dev, dtype=torch.bfloat16, requires_grad=grad)
        v = torch.randn(*kv, device=dev, dtype=torch.bfloat16, requires_grad=grad)
        d_out = torch.randn(*shape, device=dev, dtype=torch.bfloat16)

        def call() -> object:
            out = functional.scaled_dot_product_attention(q, k, v, is_causal=case.causal, **gqa)
            if grad:
                q.grad = k.grad = v.grad = None
                out.backward(d_out)
            return out

        with sdpa_kernel([self._sdpa[kernel]]):
            seconds = self._time(call, warmup, repeats)
        return Timing(seconds, "CUDA events")

    def time_copy(self, nbytes: int, warmup: int, repeats: int) -> Timing:
        """dst.copy_(src) of nbytes on the device."""
        torch = self.torch
        src = torch.ones(nbytes, device=self.device, dtype=torch.uint8)
        dst = torch.empty_like(src)
        return Timing(self._time(lambda: dst.copy_(src), warmup, repeats), "Tensor.copy_; CUDA events")

    def time_collectives(
        self, cases: Sequence[CollectiveCase], ranks: int, warmup: int, repeats: int, timeout_s: float
    ) -> dict[CollectiveCase, Timing]:
        """The cases on `ranks` spawned processes (one per GPU, NCCL/RCCL over torch.distributed); what rank 0
        has written when the time is up counts, the rest is left out."""
        from advisor.probe.nccl_worker import spawn_ranks

        with tempfile.TemporaryDirectory(prefix="gpu-advisor-probe-") as tmp:
            spec = Path(tmp) / "spec.json"
            out = Path(tmp) / "times.json"
            spec.write_text(
                json.dumps({"cases": [[c.op, c.nbytes] for c in cases], "warmup": warmup, "repeats": repeats})
            )
            failure: Exception | None = None
            try:
                spawn_ranks(self.torch, ranks, spec, out, time.monotonic() + timeout_s)
            except Exception as exc:  # noqa: BLE001 - a rank that failed late leaves what rank 0 measured first
                failure = exc
            found = json.loads(out.read_text()) if out.exists() else {}
            if failure is not None and not found:
                raise failure
        note = f"torch.distributed {'RCCL' if self.info.vendor == 'amd' else 'NCCL'}, average over ranks"
        return {
            c: Timing(tuple(found[f"{c.op}:{c.nbytes}"]), note)
            for c in cases
            if f"{c.op}:{c.nbytes}" in found
        }
