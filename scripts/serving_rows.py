"""The columns of knowledge/serving_benchmarks.csv and the helpers every serving source reader shares."""

from __future__ import annotations

from source_tables import SourceTable, fmt, number

COLUMNS = [
    "kind",
    "model",
    "source_model",
    "gpu",
    "source_gpu",
    "count",
    "tp",
    "pp",
    "ep",
    "precision",
    "kv_precision",
    "isl",
    "osl",
    "dataset",
    "batch",
    "concurrency",
    "request_rate",
    "output_tok_s",
    "output_tok_s_per_gpu",
    "requests_s",
    "ttft_ms",
    "ttft_pctl",
    "ttft_p99_ms",
    "tpot_ms",
    "tpot_pctl",
    "tpot_p99_ms",
    "itl_ms",
    "itl_pctl",
    "itl_p99_ms",
    "engine",
    "engine_version",
    "family",
    "source",
    "table",
    "row_ref",
    "note",
    "max_num_seqs",
    "max_num_batched_tokens",
    "gpu_memory_utilization",
    "requests",
    "max_model_len",
]
# max_num_seqs, max_num_batched_tokens, gpu_memory_utilization and max_model_len: engine flags the source
# records the run set away from the release's defaults (blank: the defaults of serving_engines.toml); the
# serving model prices such a row as it ran (max_model_len matters where the engine schedules whole
# prompts up to it: vLLM V0 without chunked prefill). `requests`: how many requests the run sent (its
# prompts), where the source states it: a closed loop's first `concurrency` arrive at once, so their share of
# the figures depends on it.
# offline: requests at an infinite rate, far more than one batch (maximum throughput); online: Poisson
# arrivals at request_rate; concurrency: a closed loop keeping `concurrency` requests in flight; batch:
# `batch` requests submitted together once and served to the end (continuous batching); static: a fixed
# batch without in-flight batching; ttft-bs1: first-token latency of one request alone.
KINDS = ("offline", "online", "concurrency", "batch", "static", "ttft-bs1")
PRECISIONS = ("fp8", "fp16", "bf16", "nvfp4")
KV_PRECISIONS = ("fp8", "fp16", "bf16", "int8")
PCTLS = ("mean", "p50", "p90", "p99")
ENGINES = ("trtllm", "vllm", "sglang", "lmdeploy", "tgi")
FAMILIES = ("vendor", "independent")
MODELS = {
    "LLaMA v3.1 8B": "llama-3.1-8b",
    "Llama 3.1 8B": "llama-3.1-8b",
    "LLaMA 3.1 8B": "llama-3.1-8b",
    "Llama 3.1 8B Instruct": "llama-3.1-8b",
    "LLaMA v3.1 70B": "llama-3.1-70b",
    "Llama 3.1 70B": "llama-3.1-70b",
    "LLaMA 3.1 70B": "llama-3.1-70b",
    "Llama 3.1 70B Instruct": "llama-3.1-70b",
    "Llama 3.3 70B": "llama-3.1-70b",
    "Llama 3.3 70B Instruct": "llama-3.1-70b",
    "LLaMA v3.1 405B": "llama-3.1-405b",
    "Llama 3.1 405B": "llama-3.1-405b",
    "Llama 3.1 405B Instruct": "llama-3.1-405b",
    "Mistral 7B": "mistral-7b",
    "Mixtral 8x7B": "mixtral-8x7b",
    "Mixtral 8x22B": "mixtral-8x22b",
    "LLaMA 7B": "llama-2-7b",
    "LLaMA 70B": "llama-2-70b",
    "llama2-7b": "llama-2-7b",
    "llama2-13b": "llama-2-13b",
    "llama2-70b": "llama-2-70b",
    "internlm-20b": "internlm-20b",
    "DeepSeek-R1": "deepseek-v3",
}
SAME_ARCH = {
    "Llama 3.3 70B": "Llama 3.3 70B has the Llama 3.1 70B architecture",
    "Llama 3.3 70B Instruct": "Llama 3.3 70B has the Llama 3.1 70B architecture",
    "DeepSeek-R1": "DeepSeek-R1 has the DeepSeek-V3 architecture",
}
GPUS = {
    "H200": "h200",
    "H100": "h100-sxm",
    "GH200": "gh200",
    "L40S": "l40s",
    "A100": "a100-80gb-sxm",
    "B200": "b200",
    "GB200": "gb200",
    "H100 80GB HBM3": "h100-sxm",
    "H200 131GB HBM3": "h200",
    "A100-80G": "a100-80gb-sxm",
    "A100 80G": "a100-80gb-sxm",
    "H100 80G": "h100-sxm",
    "H100 SXM5": "h100-sxm",
    "H200 141GB": "h200",
    "MI300X": "mi300x",
}


def base(src: SourceTable, engine: str, family: str, **kw: object) -> dict[str, str]:
    """A row of `src` with every column empty but the source's, the engine's and the given ones."""
    row = dict.fromkeys(COLUMNS, "")
    row.update(source=src.ref, table=src.table, engine=engine, family=family, pp="1", ep="1")
    for k, v in kw.items():
        row[k] = v if isinstance(v, str) else fmt(v)  # type: ignore[arg-type]
    return row


def per_gpu(row: dict[str, str]) -> dict[str, str]:
    """Fill output_tok_s_per_gpu from the replica's output_tok_s and its GPU count."""
    if row["output_tok_s"]:
        row["output_tok_s_per_gpu"] = fmt(float(f"{float(row['output_tok_s']) / int(row['count']):.6g}"))
    return row


def num(text: str) -> float:
    """A number the source must give (a missing one is a transcription error)."""
    v = number(text)
    if v is None:
        raise SystemExit(f"expected a number, got {text!r}")
    return v


def ms(seconds: str) -> float | None:
    """Seconds as printed by a source -> milliseconds, rounded to 0.1 ms (empty stays None)."""
    v = number(seconds)
    return None if v is None else round(v * 1000.0, 1)


def mean_len(total: str, count: str) -> int:
    """Mean tokens per request from a run's total and its completed requests, rounded to whole tokens."""
    return round(num(total) / num(count))


def model_note(source_model: str, *more: str) -> str:
    """The row's note: the same-architecture remark where the catalogue id is a sibling model, then others."""
    parts = [SAME_ARCH[source_model]] if source_model in SAME_ARCH else []
    return "; ".join([*parts, *(m for m in more if m)])
