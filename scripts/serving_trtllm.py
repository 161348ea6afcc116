"""Readers for NVIDIA's TensorRT-LLM performance pages (versions 0.5/0.6.1, 0.14, 0.17 and 1.0)."""

from __future__ import annotations

from serving_rows import GPUS, MODELS, base, model_note, per_gpu
from source_tables import SourceTable, number

PRECISION = {"FP8": "fp8", "FP16": "fp16", "FP4": "nvfp4", "BF16": "bf16"}


def trt(src: SourceTable, **kw: object) -> dict[str, str]:
    return base(src, "trtllm", "vendor", **kw)


def v017(src: SourceTable) -> list[dict[str, str]]:
    cols = {
        "h200": ("H200", "fp8"),
        "h100": ("H100", "fp8"),
        "gh200": ("GH200", "fp8"),
        "l40s": ("L40S", "fp8"),
        "a100": ("A100", "fp16"),
    }
    out = []
    for i, r in enumerate(src.rows, start=1):
        for col, (label, prec) in cols.items():
            v = number(r[col])
            if v is None:
                continue
            row = trt(
                src,
                kind="offline",
                model=MODELS[r["model"]],
                source_model=r["model"],
                gpu=GPUS[label],
                source_gpu=label,
                count=r["tp"],
                tp=r["tp"],
                precision=prec,
                kv_precision="fp8" if prec == "fp8" else "",  # the page: FP8 also quantises the KV cache
                isl=r["isl"],
                osl=r["osl"],
                dataset="fixed",
                request_rate="inf",
                output_tok_s=v,
                engine_version="0.17 (TensorRT engine)",
                row_ref=f"row {i} column {label}",
                note="A100-SXM4-80GB" if label == "A100" else "",
            )
            out.append(per_gpu(row))
    return out


def v014_online(src: SourceTable) -> list[dict[str, str]]:
    out, last = [], {}
    for i, raw in enumerate(src.rows, start=1):
        r = {k: (v if v else last.get(k, "")) for k, v in raw.items()}  # merged cells repeat the row above
        last = r
        row = trt(
            src,
            kind="online",
            model=MODELS[r["model"]],
            source_model=r["model"],
            gpu=GPUS[r["gpu"]],
            source_gpu=r["gpu"],
            count=r["tp"],
            tp=r["tp"],
            precision="bf16",
            isl=r["isl"],
            osl=r["osl"],
            request_rate=r["qps"].lower(),
            output_tok_s=r["output_tok_s"],
            requests_s=r["tput_req_s"],
            ttft_ms=r["mean_ttft_ms"],
            ttft_pctl="mean",
            itl_ms=r["mean_itl_ms"],
            itl_pctl="mean",
            engine_version="0.14.0 (Triton tensorrtllm_backend)",
            row_ref=f"row {i}",
            requests="500",
            note="500 requests; mean TTFT and mean ITL",
        )
        out.append(per_gpu(row))
    return out


def v10(src: SourceTable) -> list[dict[str, str]]:
    out = []
    for i, r in enumerate(src.rows, start=1):
        row = trt(
            src,
            kind="offline",
            model=MODELS[r["model"]],
            source_model=r["model"],
            gpu=GPUS[r["system"]],
            source_gpu=r["system"],
            count=r["tp"],
            tp=r["tp"],
            precision=PRECISION[r["precision"]],
            isl=r["isl"],
            osl=r["osl"],
            dataset="fixed",
            request_rate="inf",
            output_tok_s=number(r["output_tok_s"]),
            engine_version="1.0 (PyTorch backend)",
            row_ref=f"cell {i}",
            note=model_note(r["model"], "GB200 NVL72" if r["system"] == "GB200" else ""),
        )
        out.append(per_gpu(row))
    return out


def v061(src: SourceTable) -> list[dict[str, str]]:
    out = []
    for i, r in enumerate(src.rows, start=1):
        tp, v = int(r["tp"]), number(r["value"])
        assert v is not None
        note = ["A100 variant not stated (80GB SXM assumed)"] if r["system"] == "A100" else []
        version = "0.5" if r["kind"] == "ttft" or r["system"] == "L40S" else "0.6.1"
        kw: dict[str, object] = dict(
            model=MODELS[r["model"]],
            source_model=r["model"],
            gpu=GPUS[r["system"]],
            source_gpu=r["system"],
            count=tp,
            tp=tp,
            precision=PRECISION[r["precision"]],
            kv_precision=PRECISION[r["precision"]],  # engines built with --fp8_kv_cache; A100 without
            isl=r["isl"],
            osl=r["osl"],
            dataset="fixed",
            batch=r["batch"],
            engine_version=f"{version} (TensorRT engine, static batching)",
            row_ref=f"row {i}",
        )
        if r["kind"] == "ttft":
            row = trt(
                src,
                kind="ttft-bs1",
                ttft_ms=v,
                ttft_pctl="mean",
                note="; ".join([*note, "batch 1, output length 1"]),
                **kw,
            )
        else:
            total = v * tp if r["per_gpu"] == "1" else v
            if r["per_gpu"] == "1":
                note.append("source gives output tokens/s per GPU")
            row = per_gpu(trt(src, kind="static", output_tok_s=total, note="; ".join(note), **kw))
        out.append(row)
    return out


READERS = {
    "serve_trtllm_v0.17_throughput.csv": v017,
    "serve_trtllm_v0.14_online.csv": v014_online,
    "serve_trtllm_v1.0_throughput.csv": v10,
    "serve_trtllm_v0.6.1_static.csv": v061,
}
