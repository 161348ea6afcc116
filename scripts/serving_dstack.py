"""Readers for dstack's published benchmark data (dstackai/benchmarks): Llama 3.1 405B on H100 and MI300X
with vLLM and TGI, and DeepSeek-R1 on H200 and MI300X with SGLang, vLLM and TensorRT-LLM."""

from __future__ import annotations

import re

from serving_benches import lat
from serving_rows import MODELS, base, mean_len, model_note, num, per_gpu
from source_tables import SourceTable, fmt

LLAMA_405B = "Llama 3.1 405B"
# The gpu labels of the H100-vs-MI300X files: checkpoint, vLLM version (README environment dumps).
CHECKPOINTS = {
    ("h100-sxm", "meta"): ("", "0.6.3.post2.dev308"),
    ("mi300x", "meta"): ("", "0.6.3.dev109 (ROCm 6.2)"),
    ("mi300x", "amd"): ("fp8", "0.6.4.dev4 (ROCm 6.2)"),
}
CHECKPOINT_NAMES = {
    "meta": "meta-llama/Llama-3.1-405B-FP8 (FP8 weights)",
    "amd": "amd/Llama-3.1-405B-Instruct-FP8-KV (FP8 weights and KV cache)",
}


def _system(label: str) -> tuple[int, str, str]:
    """'8xH100 1FP8-meta' -> (8, 'h100-sxm', 'meta'); '4xMi300x 1FP8-amd' -> (4, 'mi300x', 'amd')."""
    m = re.match(r"^(\d)x(H100|Mi300x?)\s+1FP8-(meta|amd)$", label.strip())
    if not m:
        raise SystemExit(f"unexpected system label {label!r}")
    return int(m[1]), "h100-sxm" if m[2] == "H100" else "mi300x", m[3]


def _405b(src: SourceTable, label: str, **kw: object) -> dict[str, str]:
    count, gpu, ckpt = _system(label)
    kv, version = CHECKPOINTS[(gpu, ckpt)]
    mi = "; MI300X run with --enforce-eager" if gpu == "mi300x" and kw.get("kind") == "batch" else ""
    return base(
        src,
        "vllm",
        "independent",
        model=MODELS[LLAMA_405B],
        source_model=LLAMA_405B,
        gpu=gpu,
        source_gpu=label.strip(),
        count=count,
        tp=count,
        precision="fp8",
        kv_precision=kv,
        engine_version=version,
        note=f"{CHECKPOINT_NAMES[ckpt]}{mi}",
        **kw,
    )


def online_405b(src: SourceTable) -> list[dict[str, str]]:
    out = []
    for i, d in enumerate(src.rows, start=1):
        row = _405b(
            src,
            d["gpu"],
            kind="online",
            isl=mean_len(d["total_input_tokens"], d["completed"]),
            osl=mean_len(d["total_output_tokens"], d["completed"]),
            dataset="sharegpt",
            request_rate=d["request_rate"],
            output_tok_s=num(d["output_throughput"]),
            requests_s=num(d["request_throughput"]),
            **lat(d),
            row_ref=f"row {i}",
        )
        row["note"] += (
            f"; {d['num_prompts']} prompts; scheduler steps {d['num-scheduler-step']}, chunked prefill "
            f"{d['enable-chunked-prefill'].lower()}, max-num-seqs {d['max-num-seqs']}"
        )
        row["max_num_seqs"] = d["max-num-seqs"]
        row["requests"] = d["num_prompts"]
        if d["max-num-batched-tokens"] != "default":
            row["max_num_batched_tokens"] = d["max-num-batched-tokens"]
        out.append(per_gpu(row))
    return out


def batch_405b(src: SourceTable) -> list[dict[str, str]]:
    out = []
    for i, d in enumerate(src.rows, start=1):
        n, osl, secs = num(d["num_requests"]), num(d["output_len"]), num(d["elapsed_time"])
        row = _405b(
            src,
            d["gpu"],
            kind="batch",
            isl=d["input_len"],
            osl=d["output_len"],
            dataset="fixed",
            batch=d["num_requests"],
            request_rate="inf",
            output_tok_s=round(n * osl / secs, 2),
            requests_s=num(d["requests_per_second"]),
            row_ref=f"row {i}",
        )
        row["note"] += "; output tok/s = requests x output_len / elapsed_time"
        out.append(per_gpu(row))
    return out


def _mi300x_405b(src: SourceTable, engine: str, i: int, d: dict[str, str], **kw: object) -> dict[str, str]:
    version = "0.6.3.dev116 (ROCm 6.1)" if engine == "vllm" else "ROCm image sha-11d7af7"
    n = d["successful_requests"]
    row = base(
        src,
        engine,
        "independent",
        model=MODELS[LLAMA_405B],
        source_model=LLAMA_405B,
        gpu="mi300x",
        source_gpu="MI300X 192GB",
        count=8,
        tp=8,
        precision="bf16",
        isl=mean_len(d["total_input_tokens"], n),
        osl=mean_len(d["total_generated_tokens"], n),
        dataset="sonnet",
        output_tok_s=num(d["output_tok_s"]),
        requests_s=num(d["request_throughput"]),
        engine_version=version,
        row_ref=f"row {i}",
        **lat(d),
        **kw,
    )
    return per_gpu(row)


def mi300x_405b(engine: str, kind: str):  # type: ignore[no-untyped-def]
    """A reader of one dstack MI300X file: `batch` (all requests at once) or `online` (300 x k at k req/s)."""

    def read(src: SourceTable) -> list[dict[str, str]]:
        out = []
        for i, d in enumerate(src.rows, start=1):
            n = d["successful_requests"]
            if kind == "batch":
                extra = dict(kind="batch", batch=n, request_rate="inf", note=f"requests sent at once: {n}")
            else:
                rate = fmt(int(n) // 300)
                extra = dict(kind="online", request_rate=rate, note=f"{n} requests at {rate} req/s")
            out.append(_mi300x_405b(src, engine, i, d, **extra))
        return out

    return read


R1_VERSIONS = {
    ("h200", "sglang"): "0.4.3.post2 (--enable-dp-attention)",
    ("mi300x", "sglang"): "0.4.2.post4 (rocm/sglang-staging:20250212)",
    ("h200", "vllm"): "0.7.4.dev181",
    ("mi300x", "vllm"): "0.7.3.dev138 (ROCm 6.3)",
    ("h200", "trtllm"): "0.17.post1.dev",
}


R1_VLLM_MAX_MODEL_LEN = {
    ("mi300x", "concurrency"): 32768,
    ("mi300x", "batch"): 32768,
    ("h200", "batch"): 32768,
}
"""--max-model-len of the vLLM runs where Deepseek-R1/README.md states it: the vLLM-Mi300 server task and the
offline benchmark_throughput.py command (--max-model-len=32768); the vLLM-H200 server task sets none (the
model's 163,840)."""


def _r1(src: SourceTable, gpu_label: str, backend: str, **kw: object) -> dict[str, str]:
    gpu = "h200" if gpu_label == "h200" else "mi300x"
    engine = "trtllm" if backend == "trt-llm" else backend
    if engine == "vllm" and (gpu, kw["kind"]) in R1_VLLM_MAX_MODEL_LEN:
        kw["max_model_len"] = R1_VLLM_MAX_MODEL_LEN[(gpu, str(kw["kind"]))]
    return base(
        src,
        engine,
        "independent",
        model=MODELS["DeepSeek-R1"],
        source_model="DeepSeek-R1",
        gpu=gpu,
        source_gpu=gpu_label,
        count=8,
        tp=8,
        engine_version=R1_VERSIONS[(gpu, engine)],
        **kw,
    )


def r1_online(src: SourceTable) -> list[dict[str, str]]:
    """Closed-loop runs; lines whose measured mean in-flight count exceeds the cap by over 10% are left out
    (all TensorRT-LLM lines: 111 in flight at a cap of 4 cannot be, so their latencies are not trusted)."""
    out = []
    for i, d in enumerate(src.rows, start=1):
        cap = num(d["max_concurrency"])
        if num(d["concurrency"]) > 1.1 * cap:
            continue
        fixed = d["dataset_name"] == "random" and d["random_range_ratio"] == "1"
        row = _r1(
            src,
            d["GPU"],
            d["backend"],
            kind="concurrency",
            precision="fp8",
            ep=4 if d["backend"] == "trt-llm" else 1,
            isl=mean_len(d["total_input_tokens"], d["completed"]),
            osl=mean_len(d["total_output_tokens"], d["completed"]),
            dataset="fixed" if fixed else "shared-prefix",
            concurrency=d["max_concurrency"],
            request_rate="inf",
            output_tok_s=num(d["output_throughput"]),
            requests_s=num(d["request_throughput"]),
            **lat(d),
            row_ref=f"row {i}",
            requests=d["completed"],
            note=model_note(
                "DeepSeek-R1",
                f"{d['completed']} prompts; FP8 block-scaled weights as released",
                "" if fixed else "sglang generated-shared-prefix set (prefix caching on)",
            ),
        )
        out.append(per_gpu(row))
    return out


def r1_batch(src: SourceTable) -> list[dict[str, str]]:
    """Offline runs; the TensorRT-LLM lines are left out: their engine is documented as BF16, and 671B
    parameters in BF16 (1.34 TB) cannot fit 8 x 141 GB, so what ran is unknown."""
    out = []
    for i, d in enumerate(src.rows, start=1):
        if d["backend"] == "trt-llm":
            continue
        row = _r1(
            src,
            d["GPU"],
            d["backend"],
            kind="batch",
            precision="fp8",
            isl=d["input_len"],
            osl=d["output_len"],
            dataset="fixed",
            batch=d["num_requests"],
            request_rate="inf",
            output_tok_s=round(num(d["total_output_tokens"]) / num(d["elapsed_time"]), 2),
            requests_s=num(d["requests_per_second"]),
            row_ref=f"row {i}",
            note=model_note(
                "DeepSeek-R1",
                "FP8 block-scaled weights as released",
                "output tok/s = total output tokens / elapsed time",
            ),
        )
        out.append(per_gpu(row))
    return out


READERS = {
    "serve_vllm_dstack_405b_fp8_online.csv": online_405b,
    "serve_vllm_dstack_405b_fp8_batch.csv": batch_405b,
    "serve_vllm_dstack_mi300x_405b_short.csv": mi300x_405b("vllm", "batch"),
    "serve_vllm_dstack_mi300x_405b_long.csv": mi300x_405b("vllm", "batch"),
    "serve_vllm_dstack_mi300x_405b_rate.csv": mi300x_405b("vllm", "online"),
    "serve_tgi_dstack_mi300x_405b_short.csv": mi300x_405b("tgi", "batch"),
    "serve_tgi_dstack_mi300x_405b_long.csv": mi300x_405b("tgi", "batch"),
    "serve_tgi_dstack_mi300x_405b_rate.csv": mi300x_405b("tgi", "online"),
    "serve_dstack_deepseek_r1_online.csv": r1_online,
    "serve_dstack_deepseek_r1_batch.csv": r1_batch,
}
