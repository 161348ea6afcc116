"""Readers for serving-benchmark result files (sglang.bench_serving, vLLM benchmark_serving/_throughput):
SGLang's own v0.3.0-against-vLLM page, DataCrunch's H200 runs and dstack's H100/H200/MI300X comparisons."""

from __future__ import annotations

from serving_rows import GPUS, MODELS, base, mean_len, model_note, num, per_gpu
from source_tables import SourceTable, fmt, number

# ShareGPT means of sglang.bench_serving's sample (seed 1, Llama 3 tokenizer) by prompt count, as measured
# in DataCrunch's runs of the same script (total tokens / completed requests): (input, output).
SHAREGPT_MEANS = {1200: (224, 189), 2400: (225, 192), 2000: (224, 192)}
SHAREGPT_NOTE = (
    "ShareGPT mean lengths not printed by the page: taken from the same bench_serving sample measured in "
    "datacrunch-research/h200-benchmarks@c091ef530a525d2e788bc41c39a4450b09c9f2ad (sglang/outputs)"
)


def lat(d: dict[str, str], centre: str = "mean") -> dict[str, str]:
    """ttft/tpot/itl columns from a result line's `<centre>_<name>_ms` and `p99_<name>_ms` fields."""
    out = {}
    for metric in ("ttft", "tpot", "itl"):
        v = number(d.get(f"{centre}_{metric}_ms", ""))
        if v is None:
            continue
        out[f"{metric}_ms"] = fmt(round(v, 2))
        out[f"{metric}_pctl"] = "mean" if centre == "mean" else "p50"  # 'median' and 'p50' name the same
        p99 = number(d.get(f"p99_{metric}_ms", ""))
        out[f"{metric}_p99_ms"] = fmt(None if p99 is None else round(p99, 2))
    return out


def sglang_v030(src: SourceTable) -> list[dict[str, str]]:
    setups = {
        "Llama 3.1 8B Instruct 1 x A100 80G": ("Llama 3.1 8B Instruct", "A100 80G", 1),
        "Llama 3.1 70B Instruct 4 x H100 80G": ("Llama 3.1 70B Instruct", "H100 80G", 4),
    }
    out = []
    for i, r in enumerate(src.rows, start=1):
        model, gpu, tp = setups[r["setup"]]
        sglang = r["engine"] == "SGLang"
        prompts = int(r["num_prompts"])
        row = base(
            src,
            "sglang" if sglang else "vllm",
            "vendor" if sglang else "independent",  # vLLM rows are a rival engine's measurement
            model=MODELS[model],
            source_model=model,
            gpu=GPUS[gpu],
            source_gpu=gpu,
            count=tp,
            tp=tp,
            precision="bf16",
            dataset="sharegpt",
            engine_version="0.3.0" if sglang else "0.6.0 (--num-scheduler-steps 10)",
            row_ref=f"{r['section']} table {r['setup']!r} row {i}",
        )
        if r["section"] == "online":
            isl, osl = SHAREGPT_MEANS[prompts]
            row.update(kind="online", request_rate=r["rps"], **lat(r, "median"))
            note = SHAREGPT_NOTE
        else:
            rps, tput = num(r["request_throughput"]), num(r["output_tok_s"])
            isl, osl = SHAREGPT_MEANS[2000][0], round(tput / rps)
            row.update(kind="offline", request_rate="inf", output_tok_s=fmt(tput), requests_s=fmt(rps))
            note = "output mean = output tok/s / req/s; input mean: " + SHAREGPT_NOTE
        row.update(isl=fmt(isl), osl=fmt(osl), requests=str(prompts), note=f"{prompts} prompts; {note}")
        out.append(per_gpu(row))
    return out


def _datacrunch(src: SourceTable, model: str, tp: int) -> list[dict[str, str]]:
    out = []
    for i, d in enumerate(src.rows, start=1):
        sharegpt = d["dataset_name"] == "sharegpt"
        row = base(
            src,
            "sglang",
            "independent",
            kind="offline" if d["request_rate"] == "inf" else "online",
            model=MODELS[model],
            source_model=model,
            gpu=GPUS["H200"],
            source_gpu="H200 141GB",
            count=tp,
            tp=tp,
            precision="bf16",
            isl=mean_len(d["total_input_tokens"], d["completed"]),
            osl=mean_len(d["total_output_tokens"], d["completed"]),
            dataset="sharegpt" if sharegpt else "random-uniform",
            request_rate=d["request_rate"].removesuffix(".00"),
            output_tok_s=num(d["output_throughput"]),
            requests_s=round(num(d["completed"]) / num(d["duration"]), 3),
            **lat(d, "median"),
            row_ref=f"line {i}",
            requests=d["completed"],
            note=model_note(
                model,
                f"{d['completed']} prompts",
                "" if sharegpt else f"lengths uniform up to {d['random_input_len']}/{d['random_output_len']}",
                "SGLang version not recorded (lmsysorg/sglang dev image, December 2024)",
            ),
        )
        out.append(per_gpu(row))
    return out


def datacrunch_70b(src: SourceTable) -> list[dict[str, str]]:
    return _datacrunch(src, "Llama 3.3 70B Instruct", 4)


def datacrunch_405b(src: SourceTable) -> list[dict[str, str]]:
    return _datacrunch(src, "Llama 3.1 405B Instruct", 8)


# Engine, version, weights and what backs the precision, for each framework section of the RTX 3090 page.
RTX3090 = {
    "vllm": ("vllm", "0.4.1", "bf16", "dtype bfloat16 in the server log"),
    "lmdeploy": (
        "lmdeploy",
        "0.4.0 (TurboMind, api_server defaults)",
        "bf16",
        "TurboMind 0.4.0 keeps a bfloat16 checkpoint in bf16 (InternLM/lmdeploy@"
        "04ba0ff797914666ad52ed35e8297bd11151ca15:lmdeploy/turbomind/deploy/converter.py)",
    ),
    "trt-llm": (
        "trtllm",
        "0.9.0 (Triton backend; engine max batch 40)",
        "fp16",
        "engine dtype not printed: float16 assumed (no quantisation configured)",
    ),
}


def rtx3090(src: SourceTable) -> list[dict[str, str]]:
    out = []
    for i, d in enumerate(src.rows, start=1):
        engine, version, precision, why = RTX3090[d["framework"]]
        kv8 = d["variant"] == "kv-int8"
        row = base(
            src,
            engine,
            "independent",
            kind="online",
            model=MODELS["Llama 3.1 8B"],
            source_model="Meta-Llama-3-8B-Instruct",
            gpu="rtx-3090",
            source_gpu="RTX 3090 24GB",
            count=1,
            tp=1,
            precision=precision,
            kv_precision="int8" if kv8 else "",
            isl=mean_len(d["total_input_tokens"], d["num_prompts"]),
            osl=mean_len(d["total_generated_tokens"], d["num_prompts"]),
            dataset="sharegpt",
            request_rate=d["request_rate"],
            output_tok_s=num(d["output_tok_s"]),
            requests_s=num(d["request_throughput"]),
            **lat(d, "p50"),
            engine_version=version + ("; --quant-policy 8" if kv8 else ""),
            row_ref=f"row {i} ({d['framework']} {d['variant']})",
            requests=d["num_prompts"],
            note=f"Llama 3 8B has the Llama 3.1 8B shapes; {d['num_prompts']} prompts; {why}",
        )
        out.append(per_gpu(row))
    return out


def rocm_latency(version: str, kv: str):  # type: ignore[no-untyped-def]
    """A reader of one version of AMD's ROCm vLLM latency table (benchmark_latency: one batch to the end)."""

    def read(src: SourceTable) -> list[dict[str, str]]:
        out = []
        for i, d in enumerate(src.rows, start=1):
            model = "Llama 3.1 405B" if d["model"].startswith("Llama 3.1 405B") else "Llama 3.1 70B"
            n, osl, secs = num(d["batch_size"]), num(d["output"]), num(d["mi300x_latency_s"])
            row = base(
                src,
                "vllm",
                "vendor",  # AMD's documentation of its own vLLM build
                kind="batch",
                model=MODELS[model],
                source_model=d["model"],
                gpu="mi300x",
                source_gpu="MI300X 192GB",
                count=d["tp"],
                tp=d["tp"],
                precision="fp8",
                kv_precision=kv,
                isl=d["input"],
                osl=d["output"],
                dataset="fixed",
                batch=d["batch_size"],
                request_rate="inf",
                output_tok_s=round(n * osl / secs, 2),
                engine_version=version,
                row_ref=f"row {i}",
                note=f"output tok/s = batch x output / end-to-end latency ({d['mi300x_latency_s']} s)",
            )
            out.append(per_gpu(row))
        return out

    return read


READERS = {
    "serve_sglang_v0.3.0_vs_vllm_v0.6.0.csv": sglang_v030,
    "serve_sglang_datacrunch_h200_70b_offline.csv": datacrunch_70b,
    "serve_sglang_datacrunch_h200_70b_online.csv": datacrunch_70b,
    "serve_sglang_datacrunch_h200_405b_online.csv": datacrunch_405b,
    "serve_multi_zhjunqin_rtx3090.csv": rtx3090,
    "serve_vllm_rocm_mi300x_v0.7.3_latency.csv": rocm_latency("0.7.3 (ROCm 6.3.1, 20250305_aiter)", "fp8"),
    "serve_vllm_rocm_mi300x_v0.10.0_latency.csv": rocm_latency("0.10.0 (ROCm 6.4.1 image, AITER)", ""),
}
