"""Readers of the paper tables and the model-card reports among knowledge/sources/train_*.csv.

Each turns one transcribed table into llm_benchmarks.csv rows; what a source does not state stays empty
and the note says so. Throughput the source gives as TFLOPS, MFU, iteration time or GPU-hours is converted
to tokens/s per GPU with the source's own definition (named in the note); `measured` records which it was.
"""

from __future__ import annotations

from collections.abc import Callable

from llm_rows import (
    amount,
    base_row,
    catalogue_models,
    dense_causal_flops_per_token,
    finish,
    megatron_flops_per_token,
    report_row,
    round_sig,
)
from source_tables import SourceTable, fmt, number

MODELS = catalogue_models()


def sc21_rows(src: SourceTable) -> list[dict[str, str]]:
    """Narayanan et al. 2021 Table 1: hardware TFLOPS (recompute counted) back to tokens/s."""
    out = []
    for i, r in enumerate(src.rows, start=1):
        m = MODELS[f"megatron-gpt-{r['model_size'].lower()}"]
        tflops, layers, pp = float(r["tflops_per_gpu"]), int(r["layers"]), int(r["pp"])
        hw = megatron_flops_per_token(m, 2048, recompute=True)
        per_gpu = round_sig(tflops * 1e12 / hw)
        vp = layers // pp // int(r["layers_per_virtual_stage"]) if r["layers_per_virtual_stage"] else 1
        gpus, mbs, gbs, tp = int(r["gpus"]), int(r["mbs"]), int(r["gbs"]), int(r["tp"])
        row = base_row(
            src,
            "paper",
            "tflops",
            model=m["id"],
            source_model=f"GPT {r['model_size']} (Table 1)",
            gpu="a100-80gb-sxm",
            source_gpu="A100 80GB (Selene DGX A100)",
            count=gpus,
            precision="fp16",
            tp=tp,
            pp=pp,
            cp=1,
            ep=1,
            vp=vp,
            sharding="ddp",
            recompute="full",
            micro_batch=mbs,
            global_batch=gbs,
            grad_accum=gbs // (mbs * (gpus // (tp * pp))),
            seq_len=2048,
            task="pretrain",
            stack="megatron",
            software="Megatron-LM (April 2021, SC21 paper runs)",
            reported_mfu=fmt(round_sig(per_gpu * megatron_flops_per_token(m, 2048, False) / 312e12, 4)),
            hardware_tflops_per_gpu=tflops,
            reported_hfu=fmt(number(r["pct_peak"])),
            row_ref=f"Table 1 row {i} ({r['model_size']}, {gpus} GPUs)",
            note=(
                f"tokens/s = {r['tflops_per_gpu']} TFLOPS / the paper's 96 l h^2 (1 + s/6h + V/16lh) = "
                f"{hw:.4g} FLOPs per token (full recompute counted); reported_mfu recomputed without the "
                f"recompute forward (72 l h^2 (1 + s/6h) + 6 h V) over 312 TFLOPS; the table's % of peak is "
                f"its HFU; DDP {r['ddp']} (Megatron --DDP-impl), no ZeRO; fp16 with loss scaling (CONFIG.sh)"
            ),
        )
        out.append(finish(row, per_gpu, None, 8))
    return out


def mtnlg_rows(src: SourceTable) -> list[dict[str, str]]:
    """MT-NLG 530B at 280/350/420 DGX nodes: tokens/s from the iteration time and global batch."""
    out = []
    for r in src.rows:
        gpus, gbs, seq = int(r["gpus"]), int(r["gbs"]), int(r["seq_len"])
        per_gpu = round_sig(gbs * seq / float(r["iteration_s"]) / gpus)
        row = base_row(
            src,
            "paper",
            "iteration-time",
            model="megatron-gpt-530b",
            source_model="Megatron-Turing NLG 530B",
            gpu="a100-80gb-sxm",
            source_gpu="A100 SXM4 80GB (DGX A100, Selene)",
            count=gpus,
            precision="bf16",
            tp=r["tp"],
            pp=r["pp"],
            cp=1,
            ep=1,
            global_batch=gbs,
            seq_len=seq,
            task="pretrain",
            stack="megatron-deepspeed",
            software="Megatron-LM + DeepSpeed (2021)",
            hardware_tflops_per_gpu=r["tflops_per_gpu"],
            reported_hfu=fmt(number(r["utilization"])),
            train_tokens=270e9,
            row_ref=f"Utilization notes, {r['dgx_nodes']} DGX ({gpus} GPUs)",
            note=(
                f"tokens/s = {gbs} x {seq} / {r['iteration_s']} s (whole seconds as Epoch rounds them) / "
                f"{gpus}; utilization as Epoch reads the paper (hardware FLOPs over 312 TFLOPS); "
                f"micro-batch, recompute and ZeRO stage not in the quoted text; catalogue shape: the 530B of"
                f" Narayanan et al. (105 layers, d 20480), which MT-NLG shares; final batch after a ramp "
                f"from 32 over 12B tokens"
            ),
        )
        out.append(finish(row, per_gpu, None, 8))
    return out


def flash_attn_rows(src: SourceTable) -> list[dict[str, str]]:
    """FlashAttention's GPT3-1.3B and 2.7B on one 8 x A100 80GB node (measured tokens/s)."""
    config = {
        "GPT3-1.3B": ("gpt3-1.3b", 8, "gpt3xl-flash.yaml"),
        "GPT3-2.7B": ("gpt3-2.7b", 4, "gpt3-2.7B-flash.yaml"),
    }
    out = []
    for i, r in enumerate(src.rows, start=1):
        model, mbs, yaml = config[r["model"]]
        per_gpu = round_sig(amount(r["tokens_per_s"]) / 8)
        row = base_row(
            src,
            "paper",
            "tokens/s",
            model=model,
            source_model=r["model"],
            gpu="a100-80gb-sxm",
            source_gpu="8 x A100 80GB SXM4 (400W), NVLink",
            count=8,
            precision="bf16",
            tp=1,
            pp=1,
            cp=1,
            ep=1,
            vp=1,
            sharding="zero1",
            recompute="none",
            micro_batch=mbs,
            global_batch=512,
            grad_accum=512 // (mbs * 8),
            seq_len=2048,
            task="pretrain",
            stack="flash-attn",
            software="flash-attention training scripts (FlashAttention 1, 2022-12/2023-01), Lightning",
            row_ref=f"GPT3 training-speed table row {i} ({r['model']})",
            note=(
                f"micro-batch {mbs} per GPU from {yaml} (its rule for >= 80 GB GPUs); ZeRO-1 "
                f"(DDPStrategyZero1); fused MLP/dense/dropout-add-LN kernels; no activation checkpointing"
            ),
        )
        out.append(finish(row, per_gpu, None, 8))
    return out


def llama3_slide_rows(src: SourceTable) -> list[dict[str, str]]:
    """Llama 3.1 405B pre-training at 8K and 16K GPUs: model TFLOPS back to tokens/s (CP=16 row left out)."""
    m = MODELS["llama-3.1-405b"]
    out = []
    for i, r in enumerate(src.rows, start=1):
        if r["cp"] != "1":
            continue  # the long-context stage: its sequence length is not on the slide
        gpus, tflops = int(r["gpus"]), float(r["tflops_per_gpu"])
        per_token = dense_causal_flops_per_token(m, 8192)
        per_gpu = round_sig(tflops * 1e12 / per_token)
        gbs = 16 * 2**20 // 8192
        row = base_row(
            src,
            "paper",
            "tflops",
            model="llama-3.1-405b",
            source_model="Llama 3.1 405B",
            gpu="h100-sxm",
            source_gpu="H100 80GB HBM3 700 W (Meta RoCE cluster, Grand Teton)",
            count=gpus,
            precision="bf16",
            tp=r["tp"],
            pp=r["pp"],
            cp=r["cp"],
            ep=1,
            global_batch=gbs,
            seq_len=8192,
            task="pretrain",
            stack="in-house",
            software="Meta in-house (2024)",
            model_tflops_per_gpu=tflops,
            reported_mfu=fmt(round(tflops / 989.4, 3)),
            row_ref=f"slide table row {i} ({gpus} GPUs, TP {r['tp']} CP {r['cp']} PP {r['pp']})",
            note=(
                f"tokens/s = {r['tflops_per_gpu']} TFLOPS / {per_token:.4g} FLOPs per token (6 x "
                f"non-input-embedding parameters + 6 s h L causal attention; Meta's own FLOP count is not on"
                f" the slide, a full-square attention count would give 4% fewer tokens); global batch = 16M "
                f"tokens / 8192; micro-batch, recompute and sharding not on the slide; sequence 8192 from "
                f"the Llama 3 model card"
            ),
        )
        out.append(finish(row, per_gpu, tflops, 8))
    return out


CARD_MODELS = {
    "Llama 2 7B": "llama-2-7b",
    "Llama 2 13B": "llama-2-13b",
    "Llama 2 70B": "llama-2-70b",
    "Llama 3 8B": "llama-3.1-8b",
    "Llama 3 70B": "llama-3.1-70b",
    "Llama 3.1 8B": "llama-3.1-8b",
    "Llama 3.1 70B": "llama-3.1-70b",
    "Llama 3.1 405B": "llama-3.1-405b",
}
CARD_GPUS = {"A100-80GB": "a100-80gb-sxm", "H100-80GB": "h100-sxm"}
SEQ_NOTE = "sequence: the Llama 2 card's context length 4k, the Llama 3 card's 8,192; the 3.1 card gives none"


def llama_card_rows(src: SourceTable) -> list[dict[str, str]]:
    """Meta model cards: GPU-hours and tokens of each pre-training (no GPU count, layout or precision)."""
    out = []
    for i, r in enumerate(src.rows, start=1):
        qualifier = {"over": "'over 15 trillion'", "~": "'~15 trillion'", "": ""}[r["tokens_qualifier"]]
        note = [
            "GPU count, precision, layout and batch not on the card: the row trains nothing (count empty)"
        ]
        if qualifier:
            note.append(f"tokens: the card says {qualifier}, taken as 15e12 (a lower bound for 'over')")
        if r["model"].startswith("Llama 3 "):
            note.append("Llama 3 and Llama 3.1 share the architecture; the catalogue holds the 3.1 shape")
        out.append(
            report_row(
                src,
                "gpu-hours",
                amount(r["gpu_hours"]),
                amount(r["tokens"]),
                model=CARD_MODELS[r["model"]],
                source_model=r["model"],
                gpu=CARD_GPUS[r["gpu_type"]],
                source_gpu=r["gpu_type"],
                seq_len={"llama2": "4096", "llama3": "8192"}.get(r["card"], ""),
                task="pretrain",
                stack="in-house",
                software=f"Meta in-house ({r['card']} model card)",
                row_ref=f"{r['card']}/MODEL_CARD.md GPU-hours table row {i} ({r['model']})",
                note="; ".join([*note, SEQ_NOTE]),
            )
        )
    return out


def deepseek_rows(src: SourceTable) -> list[dict[str, str]]:
    """DeepSeek-V3 pre-training: H800 GPU-hours for 14.8T tokens."""
    r = src.rows[0]
    return [
        report_row(
            src,
            "gpu-hours",
            amount(r["gpu_hours"]),
            amount(r["tokens"]),
            model="deepseek-v3",
            source_model=r["model"],
            gpu="h800",
            source_gpu="H800",
            precision="fp8",
            task="pretrain",
            stack="in-house",
            software="DeepSeek in-house (HAI-LLM, 2024)",
            row_ref="README introduction (pre-training GPU hours)",
            note=(
                "H800 (not in the catalogue: the export H100 with reduced NVLink); FP8 mixed precision per "
                "the README; GPU count, layout, batch and sequence length are in the technical report, not "
                "in this file (count empty: the row trains nothing); 2.788M GPU hours for the full training "
                "incl. context extension and post-training"
            ),
        )
    ]


PAPER_READERS: dict[str, Callable[[SourceTable], list[dict[str, str]]]] = {
    "train_megatron_sc21.csv": sc21_rows,
    "train_mtnlg_530b.csv": mtnlg_rows,
    "train_flash_attention_gpt3.csv": flash_attn_rows,
    "train_llama3_405b_slide.csv": llama3_slide_rows,
    "train_llama_model_cards.csv": llama_card_rows,
    "train_deepseek_v3_report.csv": deepseek_rows,
}
