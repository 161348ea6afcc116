"""`gpu-advisor probe`: the no-GPU refusal, the measuring loop's arithmetic on a fake timing backend, the node
profile store, and the mapping from PyTorch's device names to the catalogue's GPU ids."""

from __future__ import annotations

import json
import subprocess
import sys
import types
from collections.abc import Sequence
from pathlib import Path

import pytest

from advisor.catalog import node_profile
from advisor.catalog.device_names import GIB, catalogue_gpu
from advisor.catalog.userdata import data_dir
from advisor.cli.main import main
from advisor.probe.measure import DeviceInfo, Run, Timing, figure, measure
from advisor.probe.plan import AttentionCase, CollectiveCase, GemmCase, Plan, build_plan
from advisor.probe.run import default_name, link_key, probe
from advisor.question.errors import InputError

MIB = 1 << 20


class Clock:
    """A clock that moves `step` seconds each time it is read."""

    def __init__(self, step: float = 0.0) -> None:
        self.now, self.step = 1000.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


class FakeBackend:
    """Known times: GEMM repeats (4, 1, 2) ms (median 2 ms), attention fwd 1 ms and fwd+bwd 3 ms, copies at
    4 TB/s of bytes moved, collectives at an algorithm bandwidth of 100 GB/s."""

    def __init__(self, *, fp8: bool = True, fail: Sequence[str] = (), ranks: int = 8) -> None:
        self.fp8, self.fail = fp8, set(fail)
        self.info = DeviceInfo(
            "NVIDIA H100 80GB HBM3", ranks, 85_045_477_376, "sm_90", "nvidia", "2.5.1", "12.4", "nvlink"
        )
        self.collective_calls: list[tuple[int, float]] = []

    def supports_fp8(self) -> bool:
        return self.fp8

    def time_gemm(self, case: GemmCase, warmup: int, repeats: int) -> Timing:
        if case.dtype in self.fail:
            raise RuntimeError(f"no {case.dtype} kernel")
        return Timing((0.004, 0.001, 0.002), "fake")

    def attention_kernels(self, case: AttentionCase) -> list[tuple[str, str]]:
        return [("fa2", "flash"), ("cudnn", "cudnn")]

    def time_attention(
        self, case: AttentionCase, kernel: str, pass_: str, warmup: int, repeats: int
    ) -> Timing:
        if kernel in self.fail:
            raise RuntimeError("cuDNN attention is not supported here")
        return Timing((0.001,) if pass_ == "fwd" else (0.003,))

    def time_copy(self, nbytes: int, warmup: int, repeats: int) -> Timing:
        return Timing((2 * nbytes / 4e12,))

    def time_collectives(
        self, cases: Sequence[CollectiveCase], ranks: int, warmup: int, repeats: int, timeout_s: float
    ) -> dict[CollectiveCase, Timing]:
        self.collective_calls.append((ranks, timeout_s))
        return {c: Timing((c.nbytes / 100e9,)) for c in cases}


def _plan(**kw: object) -> Plan:
    base = dict(
        gemm=(GemmCase("bf16", 4096, 14336, 4096), GemmCase("fp8", 8192, 8192, 8192)),
        attention=(AttentionCase("bf16", 2, 8192, 32, 32, 128, True),),
        copy_bytes=(1024 * MIB,),
        collectives=tuple(CollectiveCase(op, 64 * MIB) for op in ("all_reduce", "all_gather", "send_recv")),
        warmup=1,
        repeats=3,
        all_kernels=True,
    )
    return Plan(**{**base, **kw})  # type: ignore[arg-type]


def _run(plan: Plan, ranks: int = 8, clock: Clock | None = None, budget: float = 100.0) -> Run:
    clock = clock or Clock()
    return Run(plan, "h100-sxm", "nvlink4", ranks, "probe:t", "2026-11-30", clock, clock() + budget)


def test_measured_rows_follow_from_the_times_exactly() -> None:
    run = measure(FakeBackend(), _run(_plan()))
    gemm = {(r["dtype"], r["m"]): r for r in run.rows["gemm"]}
    assert gemm["bf16", 4096]["tflops"] == figure(2 * 4096 * 14336 * 4096 / 0.002 / 1e12) == 240.518
    assert gemm["fp8", 8192]["tflops"] == figure(2 * 8192**3 / 0.002 / 1e12)
    assert all(r["source"] == "probe:t" and r["measured_on"] == "2026-11-30" for r in run.rows["gemm"])
    # FlashAttention's count: 4*b*s^2*h*d halved when causal; bwd 2.5x forward, timed as fwd_bwd - fwd.
    forward = 4 * 2 * 8192**2 * 32 * 128 / 2
    attention = {(r["kernel"], r["pass"]): r for r in run.rows["attention"]}
    assert set(attention) == {(k, p) for k in ("fa2", "cudnn") for p in ("fwd", "bwd", "fwd_bwd")}
    assert attention["fa2", "fwd"]["tflops"] == figure(forward / 0.001 / 1e12)
    assert attention["fa2", "fwd_bwd"]["tflops"] == figure(3.5 * forward / 0.003 / 1e12)
    assert attention["fa2", "bwd"]["tflops"] == figure(2.5 * forward / 0.002 / 1e12)
    assert "fwd_bwd time - fwd time" in attention["fa2", "bwd"]["note"]
    assert [r["gbs"] for r in run.rows["memory"]] == [4000.0]
    # nccl-tests: busbw = S/t x 2(n-1)/n for all_reduce, (n-1)/n for all_gather, 1 for send/recv.
    busbw = {r["op"]: r["busbw_gbs"] for r in run.rows["collectives"]}
    assert busbw == {"all_reduce": 175.0, "all_gather": 87.5, "send_recv": 100.0}
    row = run.rows["collectives"][0]
    assert (row["link"], row["gpus"], row["nodes"], row["nbytes"]) == ("nvlink4", 8, 1, 64 * MIB)
    for section, rows in run.rows.items():
        assert [node_profile.check_row(section, r) for r in rows] == rows


def test_a_failing_dtype_or_kernel_is_a_note_and_the_rest_is_measured() -> None:
    run = measure(FakeBackend(fail=("fp8", "cudnn")), _run(_plan()))
    assert {r["dtype"] for r in run.rows["gemm"]} == {"bf16"}
    assert {r["kernel"] for r in run.rows["attention"]} == {"fa2"}
    assert any(n.startswith("gemm fp8: not measured (RuntimeError: no fp8 kernel)") for n in run.notes)
    assert any("cudnn: not measured" in n for n in run.notes)


def test_quick_times_one_attention_kernel_and_one_gpu_has_no_collectives() -> None:
    backend = FakeBackend(ranks=1)
    run = measure(backend, _run(_plan(all_kernels=False), ranks=1))
    assert {r["kernel"] for r in run.rows["attention"]} == {"fa2"}
    assert run.rows["collectives"] == [] and backend.collective_calls == []
    assert "collectives: one GPU, so none measured (they need two or more)" in run.notes


def test_the_time_budget_stops_the_loop_and_says_so() -> None:
    gemms = tuple(GemmCase("bf16", 1024, 4096, 4096) for _ in range(50))
    run = measure(FakeBackend(fp8=False), _run(_plan(gemm=gemms), clock=Clock(step=1.0), budget=30.0))
    assert 0 < len(run.rows["gemm"]) < 50
    assert any("cases not timed: the time budget ran out" in n for n in run.notes)


def test_collective_sizes_split_evenly_over_an_odd_rank_count() -> None:
    run = measure(
        FakeBackend(ranks=3), _run(_plan(collectives=(CollectiveCase("all_reduce", MIB),)), ranks=3)
    )
    (row,) = run.rows["collectives"]
    assert row["nbytes"] % 12 == 0 and MIB - 12 < row["nbytes"] <= MIB
    assert row["busbw_gbs"] == figure(row["nbytes"] / (row["nbytes"] / 100e9) * 4 / 3 / 1e9)


def test_the_grid_spans_llm_shapes_and_drops_fp8_when_unsupported() -> None:
    full = build_plan(quick=False, fp8=True, memory_bytes=80 * GIB)
    assert {c.dtype for c in full.gemm} == {"bf16", "fp16", "fp8"}
    assert {(c.n, c.k) for c in full.gemm} >= {(14336, 4096), (4096, 14336), (28672, 8192)}
    assert (
        min(c.nbytes for c in full.collectives) == MIB and max(c.nbytes for c in full.collectives) == 1 << 30
    )
    assert {c.op for c in full.collectives} == {
        "all_reduce",
        "all_gather",
        "reduce_scatter",
        "all_to_all",
        "send_recv",
    }
    assert all(a.batch * a.seq_len == 16384 for a in full.attention)
    assert {a.kv_heads for a in full.attention} == {32, 8}
    quick = build_plan(quick=True, fp8=False, memory_bytes=16 * GIB)
    assert {c.dtype for c in quick.gemm} == {"bf16", "fp16"} and len(quick.gemm) < len(full.gemm) / 4
    assert max(quick.copy_bytes) * 8 <= 16 * GIB


def test_probe_payload_names_the_catalogue_gpu_and_is_a_valid_profile(knowledge, monkeypatch) -> None:
    monkeypatch.setenv("NCCL_ALGO", "Ring")
    backend = FakeBackend()
    payload = probe(
        backend,
        backend.info,
        knowledge,
        name="lab",
        host="node1",
        today="2026-11-30",
        quick=True,
        clock=Clock(),
    )
    assert (
        payload["gpu"] == "h100-sxm"
        and payload["gpus"] == 8
        and payload["device_name"] == "NVIDIA H100 80GB HBM3"
    )
    assert {r["link"] for r in payload["collectives"]} == {"nvlink4"}
    assert "collectives ran with NCCL_ALGO=Ring" in payload["notes"]
    assert node_profile.check_payload(payload, "lab")["gemm"] == payload["gemm"]
    with pytest.raises(InputError, match="across 9 GPUs: PyTorch sees 8"):
        probe(backend, backend.info, knowledge, name="lab", host="h", today="2026-11-30", gpus=9)


def test_an_unknown_gpu_is_stored_under_its_raw_name_with_a_note(knowledge) -> None:
    backend = FakeBackend(ranks=1)
    info = DeviceInfo("NVIDIA RTX PRO 6000 Blackwell", 1, 96 * GIB, "sm_120", "nvidia", "2.8", "12.8", "")
    payload = probe(
        backend, info, knowledge, name="pro", host="h", today="2026-11-30", quick=True, clock=Clock()
    )
    assert payload["gpu"] == "NVIDIA RTX PRO 6000 Blackwell"
    assert {r["gpu"] for r in payload["gemm"]} == {"NVIDIA RTX PRO 6000 Blackwell"}
    assert any("is not in the GPU catalogue" in n for n in payload["notes"])
    assert default_name(payload["gpu"], "Lab Box.local") == "nvidia-rtx-pro-6000-blackwell-lab-box-local"


def test_link_keys(knowledge) -> None:
    assert link_key(knowledge.gpu("h100-sxm"), "")[0] == "nvlink4"
    assert link_key(knowledge.gpu("a100-80gb-sxm"), "nvlink")[0] == "nvlink3"
    assert link_key(knowledge.gpu("b200"), "")[0] == "nvlink5"
    assert link_key(knowledge.gpu("h100-pcie"), "pcie")[0] == "pcie5"
    assert link_key(knowledge.gpu("mi300x"), "xgmi")[0] == "xgmi"
    assert link_key(None, "")[0] == "unknown"


# --- the command --------------------------------------------------------------------------------------------
def _profiles() -> list[Path]:
    folder = data_dir() / "profiles"
    return sorted(folder.rglob("*")) if folder.exists() else []


def test_without_torch_one_line_exit_2_nothing_stored(monkeypatch, capsys) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError
    assert main(["probe"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert (
        len(err) == 1
        and "PyTorch is not installed" in err[0]
        and "pip install 'gpu-advisor[probe]'" in err[0]
    )
    assert _profiles() == []


def test_torch_without_a_gpu_one_line_exit_2_nothing_stored(monkeypatch, capsys) -> None:
    fake = types.ModuleType("torch")
    fake.__version__ = "2.5.1+cpu"  # type: ignore[attr-defined]
    fake.version = types.SimpleNamespace(cuda=None, hip=None)  # type: ignore[attr-defined]
    fake.cuda = types.SimpleNamespace(is_available=lambda: False, device_count=lambda: 0)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch", fake)
    assert main(["probe", "--quick"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert (
        "no GPU visible to PyTorch 2.5.1+cpu" in line
        and "CPU-only build" in line
        and "gpu-advisor[probe]" in line
    )
    assert _profiles() == []


def test_probe_stores_lists_and_refuses_to_overwrite(monkeypatch, capsys) -> None:
    import advisor.probe.torch_backend as torch_backend

    monkeypatch.setattr(torch_backend, "open_backend", lambda: FakeBackend())
    assert main(["probe", "--quick", "--name", "lab-h100"]) == 0
    out = capsys.readouterr().out
    assert "profile lab-h100: 8 x h100-sxm" in out and "--profile lab-h100" in out
    stored = node_profile.load_operations("lab-h100")
    assert stored is not None and stored["gemm"] and stored["collectives"]
    assert main(["probe", "--quick", "--name", "lab-h100"]) == 2
    assert "profile 'lab-h100' exists; pass --force" in capsys.readouterr().err
    assert main(["probe", "--quick", "--name", "lab-h100", "--force", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["name"] == "lab-h100"
    assert main(["probe", "--list"]) == 0
    listing = capsys.readouterr().out
    assert "lab-h100" in listing and "h100-sxm" in listing and "1 profile(s)" in listing
    assert main(["probe", "--name", "../up"]) == 2
    assert "--name: '../up' is not a profile name" in capsys.readouterr().err
    assert main(["probe", "--gpus", "9"]) == 2
    assert "--gpus: 9 is more than the 8 GPU(s) PyTorch sees" in capsys.readouterr().err


def test_probe_help_imports_no_torch_or_probe_backend() -> None:
    code = (
        "import sys\nfrom advisor.cli.main import main\n"
        "try:\n    main(['probe', '--help'])\nexcept SystemExit:\n    pass\n"
        "heavy = ('torch', 'advisor.probe.torch_backend', 'advisor.probe.run')\n"
        "print([m for m in heavy if m in sys.modules])"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip().splitlines()[-1] == "[]"


# --- the profile store --------------------------------------------------------------------------------------
def _payload(name: str = "n1") -> dict[str, object]:
    backend = FakeBackend()
    run = measure(backend, _run(_plan()))
    header = dict(
        name=name, gpu="h100-sxm", gpus=8, host="h", measured_on="2026-11-30", torch="2.5.1", cuda="12.4"
    )
    return {**header, "notes": run.notes, **run.rows}


def test_profile_round_trip_and_listing() -> None:
    payload = _payload()
    path = node_profile.save_operations("n1", payload)
    assert path == data_dir() / "profiles" / "n1" / "operations.json"
    assert node_profile.load_operations("n1") == {s: payload[s] for s in node_profile.SECTIONS}
    assert node_profile.list_profiles() == ["n1"]
    with pytest.raises(InputError, match="exists"):
        node_profile.save_operations("n1", payload)
    node_profile.save_operations("n1", {**payload, "gpus": 4}, replace=True)
    assert (node_profile.load_profile("n1") or {})["gpus"] == 4
    assert node_profile.load_operations("absent") is None
    with pytest.raises(ValueError, match="does not match its folder"):
        node_profile.save_operations("n2", payload)


@pytest.mark.parametrize(
    "text",
    [
        "{not json",
        '{"name": "n1"}',
        "[]",
    ],
)
def test_a_corrupt_profile_is_moved_aside(text: str, capsys) -> None:
    path = data_dir() / "profiles" / "n1" / "operations.json"
    path.parent.mkdir(parents=True)
    path.write_text(text)
    assert node_profile.load_operations("n1") is None
    assert not path.exists()
    (aside,) = path.parent.glob("operations.json.corrupt-*")
    assert aside.read_text() == text
    assert "moved it aside" in capsys.readouterr().err


@pytest.mark.parametrize(
    "section,column,value",
    [
        ("gemm", "tflops", -1.0),
        ("gemm", "m", 1.5),
        ("gemm", "dtype", "fp4"),
        ("attention", "causal", "yes"),
        ("attention", "pass", "backward"),
        ("memory", "gbs", float("inf")),
        ("collectives", "op", "broadcast"),
        ("collectives", "gpus", True),
        ("gemm", "measured_on", "30/11/2026"),
    ],
)
def test_a_bad_cell_makes_the_file_move_aside(section: str, column: str, value: object) -> None:
    payload = _payload()
    rows = payload[section]
    assert isinstance(rows, list)
    rows[0] = {**rows[0], column: value}
    path = data_dir() / "profiles" / "n1" / "operations.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(payload))
    assert node_profile.load_operations("n1") is None
    assert list(path.parent.glob("operations.json.corrupt-*"))
    with pytest.raises(ValueError, match=f"{section}.{column}"):
        node_profile.check_payload(payload)


# --- device names -------------------------------------------------------------------------------------------
# (name as torch.cuda.get_device_name / nvidia-smi / rocm-smi report it, memory in GiB torch reports, id).
# Sources are cited in advisor/catalog/device_names.py.
REPORTED = [
    ("NVIDIA H100 80GB HBM3", 79.2, "h100-sxm"),
    ("NVIDIA H100 PCIe", 79.2, "h100-pcie"),
    ("NVIDIA H100 NVL", 93.1, "h100-nvl"),
    ("NVIDIA H200", 139.8, "h200"),
    ("NVIDIA GH200 480GB", 95.0, "gh200"),
    ("NVIDIA B200", 178.4, "b200"),
    ("NVIDIA B300 SXM6 AC", 268.6, "b300"),
    ("NVIDIA GB200", 184.0, "gb200"),
    ("NVIDIA A100-SXM4-80GB", 79.2, "a100-80gb-sxm"),
    ("NVIDIA A100-SXM4-40GB", 39.4, "a100-40gb-sxm"),
    ("NVIDIA A100-PCIE-40GB", 39.4, "a100-40gb-pcie"),
    ("NVIDIA A100 80GB PCIe", 79.2, "a100-80gb-pcie"),
    ("Tesla V100-SXM2-16GB", 15.8, "v100-16gb"),
    ("Tesla V100-SXM2-32GB", 31.7, "v100-32gb"),
    ("Tesla V100-PCIE-32GB", 31.7, "v100-32gb"),
    ("Tesla T4", 14.6, "t4"),
    ("NVIDIA A10G", 22.0, "a10g"),
    ("NVIDIA A10", 22.0, "a10"),
    ("NVIDIA L4", 22.0, "l4"),
    ("NVIDIA L40S", 44.4, "l40s"),
    ("NVIDIA L40", 44.4, "l40"),
    ("NVIDIA A40", 44.4, "a40"),
    ("NVIDIA GeForce RTX 4090", 23.6, "rtx-4090"),
    ("NVIDIA GeForce RTX 3090", 23.6, "rtx-3090"),
    ("NVIDIA RTX A6000", 47.5, "rtx-a6000"),
    ("NVIDIA RTX 6000 Ada Generation", 47.5, "rtx-6000-ada"),
    ("AMD Instinct MI300X", 191.5, "mi300x"),
    ("AMD Instinct MI300X (gfx942:sramecc+:xnack-)", 191.5, "mi300x"),
    ("AMD Instinct MI325X", 255.9, "mi325x"),
    ("AMD Instinct MI250X/MI250", 64.0, "mi250x"),
]


@pytest.mark.parametrize("name,gib,expected", REPORTED)
def test_reported_device_names_map_to_catalogue_ids(knowledge, name: str, gib: float, expected: str) -> None:
    assert catalogue_gpu(name, knowledge, int(gib * GIB)).gpu == expected


def test_every_catalogued_name_and_alias_maps_to_its_gpu(knowledge) -> None:
    for gpu in knowledge.gpus:
        if gpu.vendor in ("nvidia", "amd"):
            for name in (gpu.id, gpu.name, *gpu.aliases):
                assert catalogue_gpu(name, knowledge).gpu == gpu.id, name
                assert catalogue_gpu(name, knowledge, int(gpu.memory_gb * GIB)).gpu == gpu.id, name


def test_unknown_and_ambiguous_devices_say_so(knowledge) -> None:
    h200_nvl = catalogue_gpu("NVIDIA H200 NVL", knowledge, int(139.8 * GIB))
    assert h200_nvl.gpu is None and "nearest: h200" in h200_nvl.note
    assert catalogue_gpu("NVIDIA H100 94GB HBM3", knowledge, 94 * GIB).gpu is None  # not the 80 GB part
    assert "not in the GPU catalogue" in catalogue_gpu("Intel Data Center GPU Max 1550", knowledge).note
    assert catalogue_gpu("", knowledge, 192 * GIB, "gfx942:sramecc+:xnack-").gpu == "mi300x"
    assert catalogue_gpu("AMD Instinct MI250X/MI250", knowledge, 64 * GIB).note.startswith(
        "PyTorch sees each"
    )


# --- the PyTorch backend, on a simulated torch ------------------------------------------------------------
class SimTorch(types.ModuleType):
    """Just enough of torch for TorchBackend: a simulated GPU clock that each kernel advances (a matmul at
    500 TFLOP/s, a copy at 4 TB/s moved, attention 2 ms a call), CUDA events that read it."""

    bfloat16, float16, float32, uint8 = "bf16", "fp16", "fp32", "u8"

    def __init__(self) -> None:
        super().__init__("torch")
        self.__version__, self.now, self.launches = "2.11.0+cu130", 0.0, 0
        self.version = types.SimpleNamespace(cuda="13.0", hip=None)
        props = types.SimpleNamespace(major=9, minor=0, total_memory=150_754_820_096, name="NVIDIA H200")
        sim = self

        class Event:
            def __init__(self, enable_timing: bool = False) -> None:
                self.t = 0.0

            def record(self) -> None:
                self.t = sim.now

            def synchronize(self) -> None:
                pass

            def elapsed_time(self, end: Event) -> float:
                return (end.t - self.t) * 1e3

        self.cuda = types.SimpleNamespace(
            is_available=lambda: True,
            device_count=lambda: 1,
            get_device_properties=lambda i: props,
            get_device_name=lambda i: props.name,
            synchronize=lambda: None,
            Event=Event,
        )

    def _tensor(self, *shape: int, **kw: object) -> types.SimpleNamespace:
        return types.SimpleNamespace(
            shape=shape, nbytes=shape[0] if kw.get("dtype") == "u8" else 0, grad=None
        )

    def device(self, kind: str, index: int) -> tuple[str, int]:
        return (kind, index)

    randn = empty = ones = _tensor

    def empty_like(self, t: types.SimpleNamespace) -> types.SimpleNamespace:
        sim = self

        def copy_(src: types.SimpleNamespace) -> None:
            sim.now += 2 * src.nbytes / 4e12
            sim.launches += 1

        return types.SimpleNamespace(shape=t.shape, copy_=copy_)

    def matmul(self, a: types.SimpleNamespace, b: types.SimpleNamespace, out: object = None) -> None:
        (m, k), (_, n) = a.shape, b.shape
        self.now += 2 * m * n * k / 500e12
        self.launches += 1


def test_the_torch_backend_times_by_cuda_events_over_batched_calls(monkeypatch) -> None:
    from advisor.probe import torch_backend

    sim = SimTorch()
    monkeypatch.setitem(sys.modules, "torch", sim)
    monkeypatch.setattr(torch_backend, "_topology", lambda count: "")
    backend = torch_backend.open_backend()
    assert backend.info == DeviceInfo(
        "NVIDIA H200", 1, 150_754_820_096, "sm_90", "nvidia", "2.11.0+cu130", "13.0", ""
    )
    timing = backend.time_gemm(GemmCase("bf16", 256, 4096, 4096), warmup=3, repeats=4)
    per_call = 2 * 256 * 4096 * 4096 / 500e12  # 17 us: a repeat batches ceil(2 ms / 17 us) = 117 calls
    assert len(timing.seconds) == 4 and all(s == pytest.approx(per_call) for s in timing.seconds)
    assert sim.launches == 3 + 1 + 4 * 117
    big = backend.time_gemm(GemmCase("bf16", 16384, 28672, 8192), warmup=1, repeats=2)
    assert big.seconds == pytest.approx((2 * 16384 * 28672 * 8192 / 500e12,) * 2)
    assert backend.time_copy(1 << 30, 1, 3).seconds == pytest.approx((2 * (1 << 30) / 4e12,) * 3)
    assert backend.supports_fp8() is False  # this torch has no _scaled_mm: no fp8 rows, no crash


def test_the_torch_backend_forces_one_sdpa_backend_and_times_backward_too(monkeypatch) -> None:
    import contextlib

    from advisor.probe import torch_backend

    sim = SimTorch()
    used: list[object] = []

    @contextlib.contextmanager
    def sdpa_kernel(backends: list[object]):
        used.append(backends)
        yield

    def sdpa(q: object, k: object, v: object, is_causal: bool, **kw: object) -> types.SimpleNamespace:
        sim.now += 1e-3 * (2 if kw == {"enable_gqa": True} else 1)

        def backward(grad: object) -> None:
            sim.now += 2e-3

        return types.SimpleNamespace(backward=backward)

    attention = types.SimpleNamespace(
        SDPBackend=types.SimpleNamespace(FLASH_ATTENTION="F", EFFICIENT_ATTENTION="E"),
        sdpa_kernel=sdpa_kernel,
    )
    monkeypatch.setitem(sys.modules, "torch", sim)
    monkeypatch.setitem(sys.modules, "torch.nn.attention", attention)
    monkeypatch.setitem(
        sys.modules, "torch.nn.functional", types.SimpleNamespace(scaled_dot_product_attention=sdpa)
    )
    monkeypatch.setattr(torch_backend, "_topology", lambda count: "")
    backend = torch_backend.open_backend()
    case = AttentionCase("bf16", 2, 8192, 32, 32, 128, True)
    kernels = backend.attention_kernels(case)
    assert [k for k, _ in kernels] == ["fa2", "sdpa"]  # this build has no cuDNN backend: not offered
    assert "FlashAttention-2" in kernels[0][1]
    assert backend.time_attention(case, "fa2", "fwd", 1, 2).seconds == pytest.approx((1e-3, 1e-3))
    assert backend.time_attention(case, "sdpa", "fwd_bwd", 1, 2).seconds == pytest.approx((3e-3, 3e-3))
    gqa = AttentionCase("bf16", 2, 8192, 32, 8, 128, True)
    assert backend.time_attention(gqa, "fa2", "fwd", 1, 1).seconds == pytest.approx((2e-3,))
    assert used == [["F"], ["E"], ["F"]]


def test_collective_buffers_are_sized_as_nccl_tests_counts_s() -> None:
    from advisor.probe.nccl_worker import _operation, calls_per_repeat

    calls: list[tuple[str, tuple[int, ...]]] = []

    def op(name: str):
        return lambda *tensors: calls.append((name, tuple(t.n for t in tensors)))

    fake_torch = types.SimpleNamespace(
        device=lambda kind, i: (kind, i),
        float32="f32",
        zeros=lambda n, device, dtype: types.SimpleNamespace(n=n),
    )
    dist = types.SimpleNamespace(
        all_reduce=op("all_reduce"),
        all_gather_into_tensor=op("all_gather"),
        reduce_scatter_tensor=op("reduce_scatter"),
        all_to_all_single=op("all_to_all"),
        isend="isend",
        irecv="irecv",
        P2POp=lambda kind, tensor, peer: (kind, tensor.n, peer),
        batch_isend_irecv=lambda ops: calls.append(("send_recv", tuple(ops))) or [],
    )
    count = (64 * MIB) // 4
    for name in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv"):
        _operation(fake_torch, dist, name, 64 * MIB, rank=3, world=8)()
    assert calls == [
        ("all_reduce", (count,)),
        ("all_gather", (count, count // 8)),  # output: the whole S; input: each rank's share
        ("reduce_scatter", (count // 8, count)),  # output: a share; input: the whole S
        ("all_to_all", (count, count)),
        ("send_recv", (("isend", count, 4), ("irecv", count, 2))),  # a ring: to the next rank, from the last
    ]
    assert [calls_per_repeat(b) for b in (MIB, 64 * MIB, 1 << 30)] == [20, 5, 2]


def test_a_torch_that_does_not_load_is_one_line_too(monkeypatch, capsys) -> None:
    import importlib

    real = importlib.import_module

    def broken(name: str, *args: object) -> object:
        if name == "torch":
            raise OSError("libcudart.so.13: cannot open shared object file")
        return real(name, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(importlib, "import_module", broken)
    assert main(["probe"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "PyTorch is installed but does not load (libcudart.so.13" in line
    assert _profiles() == []
