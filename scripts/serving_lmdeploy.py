"""Readers for LMDeploy's own A100 benchmark page (TurboMind v0.1.0 and v0.2.0)."""

from __future__ import annotations

from serving_rows import GPUS, MODELS, base, ms, num, per_gpu
from source_tables import SourceTable, fmt

SHAREGPT_LENGTHS = "ShareGPT means derived: output = out tok/s / req/s, input = (total - out) tok/s / req/s"


def lmd(src: SourceTable, version: str, model: str, tp: str, **kw: object) -> dict[str, str]:
    return base(
        src,
        "lmdeploy",
        "vendor",
        model=MODELS[model],
        source_model=model,
        gpu=GPUS["A100-80G"],
        source_gpu="A100-80G",
        count=tp,
        tp=tp,
        precision="fp16",
        kv_precision="fp16",  # the FP16 tables; the page's KV8 tables are separate
        engine_version=f"{version} (TurboMind)",
        **kw,
    )


def static_v010(src: SourceTable) -> list[dict[str, str]]:
    """Closed-loop runs: `batch` client threads send identical fixed-length requests back to back."""
    out = []
    for i, r in enumerate(src.rows, start=1):
        row = lmd(
            src,
            "0.1.0",
            r["model"],
            r["tp"],
            kind="concurrency",
            isl=r["prompt_tokens"],
            osl=r["output_tokens"],
            dataset="fixed",
            concurrency=r["batch"],
            output_tok_s=num(r["throughput_out_tok_s"]),
            ttft_ms=ms(r["ftl_ave_s"]),
            ttft_pctl="mean",
            itl_ms=ms(r["p50_s"]),
            itl_pctl="p50",
            itl_p99_ms=ms(r["p99_s"]),
            row_ref=f"row {i} ({r['model']})",
            note="per-token latency percentiles exclude the first token; tokens streamed together count once",
        )
        out.append(per_gpu(row))
    return out


def _request_row(src: SourceTable, version: str, i: int, r: dict[str, str]) -> dict[str, str]:
    rps, out_tok, total_tok = num(r["rps"]), num(r["out_tok_s"]), num(r["total_tok_s"])
    return lmd(
        src,
        version,
        r["model"],
        r["tp"],
        kind="concurrency",
        isl=fmt(round((total_tok - out_tok) / rps)),
        osl=fmt(round(out_tok / rps)),
        dataset="sharegpt",
        concurrency=r["batch"],
        output_tok_s=out_tok,
        requests_s=rps,
        ttft_ms=ms(r["ftl_ave_s"]),
        ttft_pctl="mean",
        row_ref=f"row {i}",
        requests=r["num_prompts"],
        note=f"{r['num_prompts']} prompts; {SHAREGPT_LENGTHS}",
    )


def request_v010(src: SourceTable) -> list[dict[str, str]]:
    out, model = [], ""
    for i, raw in enumerate(src.rows, start=1):
        model = raw["model"] or model  # an empty model cell repeats the row above
        out.append(per_gpu(_request_row(src, "0.1.0", i, {**raw, "model": model})))
    return out


def request_v020(src: SourceTable) -> list[dict[str, str]]:
    out = []
    for i, r in enumerate(src.rows, start=1):
        row = _request_row(src, "0.2.0", i, r)
        row.update(itl_ms=fmt(ms(r["p50_s"])), itl_pctl="p50", itl_p99_ms=fmt(ms(r["p99_s"])))
        row["note"] += "; per-token latency percentiles exclude the first token"
        out.append(per_gpu(row))
    return out


READERS = {
    "serve_lmdeploy_v0.1.0_static.csv": static_v010,
    "serve_lmdeploy_v0.1.0_request.csv": request_v010,
    "serve_lmdeploy_v0.2.0_request.csv": request_v020,
}
