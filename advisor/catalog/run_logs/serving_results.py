"""Provides the readers of serving benchmark results: `vllm bench serve --save-result` JSON and SGLang's
`bench_serving` output file (one JSON object per line, appended per run).

Keys as the tools write them: vLLM's result_json (date, endpoint_type, backend, label, model_id,
tokenizer_id, num_prompts, request_rate, burstiness, max_concurrency) merged with the benchmark result
(duration, completed, total_input_tokens, total_output_tokens, request_throughput, output_throughput,
total_token_throughput, mean_/median_/std_/p99_ ttft_ms, tpot_ms, itl_ms, e2el_ms)
(vllm-project/vllm@def9ce85ba1079af970a58ed3d42dd861ae35d58: vllm/benchmarks/serve.py); SGLang's result
(backend, dataset_name, request_rate, max_concurrency, random_input_len, random_output_len, duration,
completed, total_input_tokens, total_output_tokens, total_output_tokens_retokenized, request_throughput,
input_throughput, output_throughput, mean_e2e_latency_ms, ..., median_ttft_ms, median_tpot_ms, ...)
(sgl-project/sglang@50a613687fe1ffc6f1bb630c684a24c428a54a74: python/sglang/bench_serving.py).
"""

from __future__ import annotations

import json
import math
from typing import Any

from advisor.catalog.run_logs.reading import Reading

SGLANG_KEYS = ("total_output_tokens_retokenized", "mean_e2e_latency_ms", "server_info")
VLLM_KEYS = ("endpoint_type", "tokenizer_id", "burstiness", "mean_e2el_ms", "median_e2el_ms")


def _objects(text: str) -> list[dict[str, Any]] | None:
    """The JSON object of a file, or its JSON lines; None when it is not JSON."""
    stripped = text.strip()
    if not stripped.startswith("{"):
        return None
    try:
        value = json.loads(stripped)
        return [value] if isinstance(value, dict) else None
    except ValueError:
        pass
    out = []
    for line in stripped.splitlines():
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError:
            return None
        if not isinstance(value, dict):
            return None
        out.append(value)
    return out or None


def _number(obj: dict[str, Any], key: str) -> float | None:
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _one(obj: dict[str, Any], engine: str, source: str) -> Reading:
    """One result object as a measured serving run."""
    tput = _number(obj, "output_throughput")
    if tput is None or tput <= 0:
        return Reading(engine, "serving", source)
    inputs: dict[str, Any] = {"engine": engine, "kind": "inference"}
    lines = [f"output_throughput {tput:,.1f} output tokens/s"]
    measured = {"output_tok_s": tput}
    for key, name in (("median_ttft_ms", "ttft_ms"), ("median_tpot_ms", "tpot_ms")):
        value = _number(obj, key)
        if value is not None and value > 0:
            measured[name] = value
            lines.append(f"{key} {value:,.1f}")
    done = _number(obj, "completed")
    for key, name in (("total_input_tokens", "prompt_tokens"), ("total_output_tokens", "output_tokens")):
        total = _number(obj, key)
        if total and done:
            inputs[name] = max(1, round(total / done))
            lines.append(f"{name} = {key} {total:,.0f} / completed {done:,.0f} = {inputs[name]}")
    conc = _number(obj, "max_concurrency")
    rate = obj.get("request_rate")
    needs: tuple[tuple[str, str], ...] = ()
    if conc is not None and conc >= 1:
        inputs["batch_size"] = int(conc)
        lines.append(f"max_concurrency {int(conc)} (requests in flight)")
    elif isinstance(rate, (int, float)) and not isinstance(rate, bool) and 0 < rate < math.inf:
        inputs["requests_per_s"] = float(rate)
        lines.append(f"request_rate {rate:g} req/s")
    else:  # every prompt sent at once and no cap on the requests in flight: the flags say the load
        needs = (("concurrency", "the requests in flight it was measured at, or --requests-per-s its rate"),)
    model = obj.get("model_id")
    if isinstance(model, str) and model.strip():
        inputs["model"] = model.strip()
        lines.append(f"model_id {model.strip()!r}")
    return Reading(
        engine,
        "serving",
        source,
        inputs,
        measured,
        tuple(lines),
        needs,
    )


def serving_result(text: str, source: str) -> list[Reading] | None:
    """vLLM's or SGLang's result objects as runs (one per object), None when the file is neither."""
    objects = _objects(text)
    if not objects or not any("output_throughput" in o or "request_throughput" in o for o in objects):
        return None
    out = []
    for i, obj in enumerate(objects, 1):
        engine = "sglang" if any(k in obj for k in SGLANG_KEYS) else "vllm"
        where = source if len(objects) == 1 else f"{source} result {i}"
        out.append(_one(obj, engine, where))
    return out
