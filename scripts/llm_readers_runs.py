"""Readers of the production-run logs, end-to-end wall clocks and independent benchmarks among
knowledge/sources/train_*.csv (BLOOM, OPT, SmolLM3, nanotron's playbook sweep, ml-engineering, TinyLlama)."""

from __future__ import annotations

from collections.abc import Callable

from llm_rows import (
    amount,
    base_row,
    catalogue_models,
    dense_causal_flops_per_token,
    finish,
    nanotron_flops_per_token,
    report_row,
    round_sig,
    wall_clock_days,
)
from source_tables import SourceTable, fmt, number

MODELS = catalogue_models()
BLOOM_SETUP = dict(
    model="bloom-176b",
    source_model="BLOOM-176B (tr11)",
    gpu="a100-80gb-sxm",
    source_gpu="A100 80GB (Jean Zay, 8 per node, Omni-Path)",
    precision="bf16",
    cp=1,
    ep=1,
    vp=1,
    sharding="zero1",
    recompute="full",
    task="pretrain",
    stack="megatron-deepspeed",
    software="Megatron-DeepSpeed with DeepSpeed BF16_Optimizer, PyTorch 1.11 (2022)",
)


def bloom_throughput_rows(src: SourceTable) -> list[dict[str, str]]:
    """The BLOOM-176B log line at the end of epoch one: samples/s x sequence."""
    r = src.rows[0]
    gpus, seq = int(r["gpus"]), int(r["seq_len"])
    per_gpu = round_sig(float(r["samples_per_s"]) * seq / gpus)
    row = base_row(
        src,
        "independent",
        "tokens/s",
        count=gpus,
        tp=r["tp"],
        pp=r["pp"],
        micro_batch=r["mbs"],
        global_batch=r["gbs"],
        grad_accum=int(r["gbs"]) // (int(r["mbs"]) * int(r["dp"])),
        seq_len=seq,
        hardware_tflops_per_gpu=r["tflops"],
        reported_hfu=fmt(round_sig(float(r["tflops"]) / 312.0, 3)),
        row_ref=f"log line at iteration {r['iteration']}",
        note=(
            f"tokens/s = {r['samples_per_s']} samples/s x {seq} / {gpus} ({r['iteration_s']} s per iteration"
            f" of {r['gbs']} x {seq}); TFLOPs are hardware FLOPs (the 4*2 coefficient: activation "
            f"checkpointing); ZeRO-1 inside DeepSpeed's BF16_Optimizer; a production step, not a benchmark"
        ),
        **BLOOM_SETUP,
    )
    return [finish(row, per_gpu, None, 8)]


def bloom_run_rows(src: SourceTable) -> list[dict[str, str]]:
    """BLOOM-176B epoch one: tokens over 384 GPUs x the wall clock from the start to the end of epoch one."""
    r = src.rows[0]
    gpus, days = int(r["gpus"]), wall_clock_days(r["start"], r["end"])
    return [
        report_row(
            src,
            "wall-clock",
            gpus * days * 24,
            float(r["tokens"]),
            count=gpus,
            tp=r["tp"],
            pp=r["pp"],
            micro_batch=r["mbs"],
            global_batch=r["gbs_final"],
            seq_len=r["seq_len"],
            row_ref=f"chronology {r['start']} to {r['end']} (epoch one, iteration 85376)",
            note=(
                f"GPU-hours = {gpus} GPUs x {days:g} days (start 11:42am PST; the end hour of June 28 is not"
                f" given: +- 0.5 day); includes the batch ramp-up from 16 to 2048 sequences, restarts and "
                f"downtime"
            ),
            **BLOOM_SETUP,
        )
    ]


def opt_run_rows(src: SourceTable) -> list[dict[str, str]]:
    """OPT-175B: 300B tokens on 992 A100 80GB between the launch of the 12.xx lineage and completion."""
    r = src.rows[0]
    gpus, days = int(r["gpus"]), wall_clock_days(r["start"], r["end"])
    return [
        report_row(
            src,
            "wall-clock",
            gpus * days * 24,
            amount(r["tokens"]),
            model="gpt3-175b",
            source_model="OPT-175B",
            gpu="a100-80gb-sxm",
            source_gpu="A100 80GB (124 hosts x 8, cloud)",
            count=gpus,
            precision="fp16",
            tp=r["tp"],
            pp=1,
            cp=1,
            ep=1,
            vp=1,
            sharding="fsdp-grad-op",
            recompute="full",
            micro_batch=8,
            global_batch=992,
            grad_accum=1,
            seq_len=2048,
            task="pretrain",
            stack="metaseq",
            software="metaseq (FSDP + Megatron tensor parallel; Megatron 2.4 then 2.6), 2021",
            row_ref=f"chronicles {r['start']} (12.00 launched) to {r['end']} (completed)",
            note=(
                f"GPU-hours = {gpus} x {days:g} days (hour of Nov 11 not given: +- 0.5 day); ~90 restarts, "
                f"rollbacks and a cluster deletion on Dec 21 are inside the wall clock; shape: GPT-3 175B, "
                f"which OPT-175B copies (opt_job_constants '175b': 96 layers, 12288, 96 heads of 128); "
                f"batch, sharding, recompute and fp16 from the opt_baselines.py launcher of exp 12.00: (2^21"
                f" tokens // 124 replicas) // 2048 = micro-batch 8, global 992 sequences, FSDP without "
                f"resharding after forward (ZeRO-2)"
            ),
        )
    ]


def smollm3_rows(src: SourceTable) -> list[dict[str, str]]:
    """SmolLM3: 11.1T tokens (train_steps x batch) on 384 H100 in 24 days."""
    r = src.rows[0]
    gpus, dp, mbs, seq = int(r["gpus"]), int(r["dp"]), int(r["mbs"]), int(r["seq_len"])
    tokens = int(r["train_steps"]) * dp * mbs * int(r["grad_accum"]) * seq
    return [
        report_row(
            src,
            "wall-clock",
            gpus * float(r["days"]) * 24,
            float(tokens),
            model="smollm3-3b",
            source_model="SmolLM3 3B",
            gpu="h100-sxm",
            source_gpu="H100",
            count=gpus,
            precision="bf16",
            tp=r["tp"],
            pp=r["pp"],
            cp=1,
            ep=1,
            vp=1,
            sharding="ddp",
            recompute="none",
            micro_batch=mbs,
            global_batch=dp * mbs * int(r["grad_accum"]),
            grad_accum=r["grad_accum"],
            seq_len=seq,
            task="pretrain",
            stack="nanotron",
            software="nanotron (2025)",
            row_ref="README 'Training Configuration' and stage configs",
            note=(
                "GPU-hours = 384 x 24 days (rounded by the source); ZeRO stage 0 (ddp), TP 2 with sequence "
                "parallel (REDUCE_SCATTER), no recompute; H100 variant not stated (SXM assumed: the "
                "catalogue H100)"
            ),
        )
    ]


def nanotron_rows(src: SourceTable) -> list[dict[str, str]]:
    """nanotron's best configuration per model size and node count: MFU back to tokens/s (nanotron FLOPs)."""
    out = []
    for i, r in enumerate(src.rows, start=1):
        m = MODELS[f"nanotron-bench-{r['model_b'].rstrip('0').rstrip('.')}b"]
        mfu = float(r["mfu"]) / 100
        per_token = nanotron_flops_per_token(m, 4096)
        per_gpu = round_sig(mfu * 989e12 / per_token)
        dp, mbs, gas = int(r["dp"]), int(r["mbs"]), int(r["gas"])
        row = base_row(
            src,
            "independent",
            "mfu",
            model=m["id"],
            source_model=f"Llama {r['model_b']}B (playbook sweep)",
            gpu="h100-sxm",
            source_gpu="H100 80GB (8 per node)",
            count=int(r["nodes"]) * 8,
            precision="bf16",
            tp=r["tp"],
            pp=r["pp"],
            cp=1,
            ep=1,
            vp=1,
            sharding="zero1" if r["zero"] == "1" else "ddp",
            micro_batch=mbs,
            global_batch=dp * mbs * gas,
            grad_accum=gas,
            seq_len=4096,
            task="pretrain",
            stack="nanotron",
            software="nanotron v0.5 (2025-02)",
            reported_mfu=fmt(mfu),
            memory_gib=r["memory_gb"],
            row_ref=f"figure cell {i} ({r['model_b']}B, {r['nodes']} nodes)",
            note=(
                f"tokens/s = MFU x 989 TFLOPS / nanotron's {per_token:.4g} FLOPs per token (get_flops, "
                f"full-square attention); recompute not stated (nanotron's recompute_layer defaults to "
                f"false; the sweep's base config is not in the repository); bf16 (nanotron v0.5 has no FP8 "
                f"training; MFU is over the BF16 peak); memory: the figure's GB is nanotron's bytes / 1024^3 "
                f"('Mem Alloc (GB)' / 'Mem Res (GB)' in helpers.py; which one is not stated); the best of a "
                f"sweep, not a typical run"
            ),
        )
        out.append(finish(row, per_gpu, None, 8))
    return out


def mlengineering_rows(src: SourceTable) -> list[dict[str, str]]:
    """Llama-3.1-8B on 8 x H200 and 8 x B200 with DeepSpeed (TFLOPS per GPU back to tokens/s)."""
    m, out = MODELS["llama-3.1-8b"], []
    for i, r in enumerate(src.rows, start=1):
        seq, tflops = int(r["seq_len"]), float(r["tflops"])
        per_token = dense_causal_flops_per_token(m, seq)
        per_gpu = round_sig(tflops * 1e12 / per_token)
        ckpt, offload = r["activation_checkpointing"] == "on", r["cpu_offload"]
        note = [
            f"tokens/s = {r['tflops']} TFLOPS / benchmark.py's {per_token:.4g} FLOPs per token (causal "
            f"attention)",
            "ZeRO-3 with optimizer states offloaded to CPU (DeepSpeed offload_optimizer), Liger-Kernel fused"
            " RMSNorm/RoPE/SwiGLU/cross-entropy"
            if offload == "on"
            else "ZeRO-2, no activation checkpointing; CPU offload and Liger not stated for this table",
            "one unpacked sequence per GPU (real weights, synthetic batch)",
        ]
        row = base_row(
            src,
            "independent",
            "tflops",
            model="llama-3.1-8b",
            source_model="meta-llama/Llama-3.1-8B",
            gpu=r["gpu"].lower(),
            source_gpu=f"8 x {r['gpu']}",
            count=8,
            precision="bf16",
            tp=1,
            pp=1,
            cp=1,
            ep=1,
            vp=1,
            sharding=f"zero{r['zero']}",
            recompute="full" if ckpt else "none",
            # The sweeps state "CPU-offload" (offload_optimizer); the decomposition table does not say.
            offload="optimizer" if offload == "on" else "",
            micro_batch=1,
            global_batch=8,
            grad_accum=1,
            seq_len=seq,
            task="finetune",
            stack="deepspeed",
            software=f"DeepSpeed 0.19.2, torch {r['torch']}/{r['cuda']}, transformers 5.14.1, "
            f"{'FlashAttention-3' if r['gpu'] == 'H200' else 'FlashAttention-4 beta'} (2026)",
            model_tflops_per_gpu=tflops,
            reported_mfu=fmt(number(r["mfu"])) if r["mfu"] else "",
            memory_gib=r["peak_gib"],
            row_ref=f"{r['table']} row {i} ({r['gpu']}, seq {seq}, torch {r['torch']}/{r['cuda']})",
            note="; ".join(note),
        )
        out.append(finish(row, per_gpu, tflops, 8))
    return out


def tinyllama_rows(src: SourceTable) -> list[dict[str, str]]:
    """TinyLlama's stated 24k tokens/s per A100-40G at 56% MFU."""
    r = src.rows[0]
    seq, mbs, gpus = int(r["seq_len"]), int(r["micro_batch_script"]), int(r["gpus"])
    row = base_row(
        src,
        "independent",
        "tokens/s",
        model="tinyllama-1.1b",
        source_model="TinyLlama-1.1B",
        gpu="a100-40gb-sxm",
        source_gpu="A100-40G",
        count=gpus,
        precision="bf16",
        tp=1,
        pp=1,
        cp=1,
        ep=1,
        vp=1,
        sharding="fsdp-full",
        recompute="none",
        offload="none",  # pretrain/tinyllama.py: FSDPStrategy(..., cpu_offload=False)
        micro_batch=mbs,
        global_batch=r["global_batch_seqs"],
        grad_accum=int(r["global_batch_seqs"]) // (mbs * gpus),
        seq_len=seq,
        task="pretrain",
        stack="litgpt",
        software="TinyLlama (lit-gpt + FlashAttention-2 fused kernels, Lightning FSDP), 2023",
        reported_mfu=fmt(number(r["mfu"])),
        row_ref="README 'Blazingly Fast' throughput",
        note=(
            "GPU count from 'Training Details' (16 A100-40G), not from the throughput sentence; A100-40G "
            "form factor not stated (SXM assumed); '16k tokens' per GPU = micro-batch 8 x 2048 "
            "(micro_batch_size = 8 in pretrain/tinyllama.py); bf16-mixed is lit-gpt's default on an A100; "
            "FSDP full sharding is Lightning's default strategy"
        ),
    )
    return [finish(row, amount(r["tokens_per_s_per_gpu"]), None, 8)]


RUN_READERS: dict[str, Callable[[SourceTable], list[dict[str, str]]]] = {
    "train_bloom_176b_throughput.csv": bloom_throughput_rows,
    "train_bloom_176b_run.csv": bloom_run_rows,
    "train_opt_175b_run.csv": opt_run_rows,
    "train_smollm3_run.csv": smollm3_rows,
    "train_nanotron_playbook.csv": nanotron_rows,
    "train_mlengineering_h200_b200.csv": mlengineering_rows,
    "train_tinyllama.csv": tinyllama_rows,
}
