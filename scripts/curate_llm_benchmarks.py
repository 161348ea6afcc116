#!/usr/bin/env python3
"""Build knowledge/llm_benchmarks.csv from the transcribed tables in knowledge/sources/train_*.csv.

Run from anywhere:  python scripts/curate_llm_benchmarks.py [--check]
Same input, same bytes. --check compares with the committed file instead of writing it (exit 1 if different).
MosaicML rows (llm-foundry benchmarking tables) stay in knowledge/benchmarks.csv and are counted here by
reference, not copied. Every row carries its family (vendor, paper, report, independent) and how its
throughput was measured. The vendor tables and fms-fsdp / this repository's rows are read here; the paper,
report and independent tables by llm_readers_papers.py and llm_readers_runs.py. Prints the GPUs and models
not (yet) in the catalogue, rows, GPUs, sizes, GPU counts and the median implied MFU per family and source,
and the external-validation rows whose source now trains (they must leave the held-out set).
"""

from __future__ import annotations

import statistics
import sys
import tomllib
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from llm_readers_papers import PAPER_READERS
from llm_readers_runs import RUN_READERS
from llm_rows import COLUMNS, FAMILIES, MEASURED, base_row, finish
from source_tables import SourceTable, fmt, number, read_source, split_alt, write_csv

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ROOT / "knowledge" / "sources"
OUT = ROOT / "knowledge" / "llm_benchmarks.csv"

PRECISIONS = {"bf16", "fp16", "fp8", "fp8-block", "mxfp8", "nvfp4", ""}
# Training stacks as the sources name them. megatron-deepspeed: Megatron-LM with DeepSpeed pipeline and ZeRO
# (BLOOM, MT-NLG); metaseq: Meta's FSDP + Megatron tensor parallel (OPT); nanotron: Hugging Face's 3D
# trainer; litgpt: Lightning Fabric FSDP with fused kernels (TinyLlama); flash-attn: the FlashAttention repo's
# GPT trainer; in-house: a lab's own stack the source does not name (Llama 3, DeepSeek-V3).
STACKS = {
    "megatron",
    "torchtitan",
    "pytorch-fsdp",
    "composer",
    "hf",
    "deepspeed",
    "megatron-deepspeed",
    "metaseq",
    "nanotron",
    "litgpt",
    "flash-attn",
    "in-house",
}

MODELS = {
    "GPT3-5B": "gpt3-5b",
    "GPT3-20B": "gpt3-20b",
    "GPT3-175B": "gpt3-175b",
    "LLAMA2-7B": "llama-2-7b",
    "LLAMA2-13B": "llama-2-13b",
    "LLAMA2-70B": "llama-2-70b",
    "Nemotron-8B": "nemotron-8b",
    "Nemotron-22B": "nemotron-22b",
    "Nemotron-340B": "nemotron-4-340b",
    "LLAMA3-8B": "llama-3.1-8b",
    "LLAMA3_8B": "llama-3.1-8b",
    "LLAMA3-70B": "llama-3.1-70b",
    "LLAMA3_70B": "llama-3.1-70b",
    "LLAMA3.1_405B": "llama-3.1-405b",
    "DeepSeekV3": "deepseek-v3",
    "GPT OSS 120B": "gpt-oss-120b",
    "Qwen3_30B_a3B": "qwen3-30b-a3b",
    "Qwen3_235B_a22B": "qwen3-235b-a22b",
}
SAME_ARCH = {"LLAMA3-8B", "LLAMA3_8B", "LLAMA3-70B", "LLAMA3_70B"}
SAME_ARCH_NOTE = "Llama 3 and Llama 3.1 share the architecture; the catalogue holds the 3.1 shape"
SYSTEMS = {  # system label -> (gpu id, GPUs per node)
    "DGX-H100": ("h100-sxm", 8),
    "DGX-B200": ("b200", 8),
    "DGX-B300": ("b300", 8),
    "DGX-GB200": ("gb200", 4),
    "DGX-GB300": ("gb300", 4),
}
MB_PRECISION = {"FP8-CS": "fp8", "FP8-MX": "mxfp8", "NVFP4": "nvfp4", "BF16": "bf16"}


def catalogue_ids(name: str, key: str) -> set[str]:
    with (ROOT / "knowledge" / name).open("rb") as f:
        return {m["id"] for m in tomllib.load(f)[key]}


def nemo_rows(src: SourceTable) -> list[dict[str, str]]:
    out = []
    for i, r in enumerate(src.rows, start=1):
        label = r["model"]
        note = [SAME_ARCH_NOTE] if label in SAME_ARCH else []
        if r["task"] != "pretrain":
            note.append("fine-tuning on SQuAD-v1.1 packed to 4096 tokens")
        cp = r["cp"] or "1"
        dp = int(r["gpus"]) // (int(r["tp"]) * int(r["pp"]) * int(cp))
        ga = int(r["gbs"]) / (int(r["mbs"]) * dp)
        row = base_row(
            src,
            "vendor",
            "tokens/s",
            model=MODELS[label],
            source_model=label,
            gpu="h100-sxm",
            source_gpu="DGX-H100",
            count=r["gpus"],
            precision="fp8",
            tp=r["tp"],
            pp=r["pp"],
            cp=cp,
            ep="1",
            vp=r["vp"] or "1",
            micro_batch=r["mbs"],
            global_batch=r["gbs"],
            grad_accum=fmt(ga) if ga.is_integer() else "",
            seq_len=r["seq_len"],
            task=r["task"],
            stack="megatron",
            software="NeMo 24.07 container",
            row_ref=f"{r['task']} row {i} ({label}, {r['gpus']} GPUs)",
            note="; ".join(note),
        )
        out.append(finish(row, float(r["tokens_per_s_per_gpu"]), number(r["model_tflops_per_gpu"]), 8))
    return out


def mb_variants(r: dict[str, str]) -> list[tuple[dict[str, str], str]]:
    """Split 'a (b)' cells into the main configuration and its parenthesised alternative."""
    main = {k: split_alt(v)[0] for k, v in r.items()}
    alt_cells = {k: split_alt(v)[1] for k, v in r.items()}
    out = [(main, "main")]
    if alt_cells["tokens_per_s_per_gpu"] is not None:
        alt = {k: (alt_cells[k] if alt_cells[k] is not None and k != "model" else main[k]) for k in r}
        out.append((alt, "alternative in parentheses"))
    return out


def mb_precision(system: str, cell: str, which: str) -> tuple[str, str]:
    if cell:
        return MB_PRECISION[cell], ""
    # 25.09 tables have no precision column; their footnote names the parenthesised granularity.
    if which == "main":
        return (
            "fp8",
            "25.09 table has no precision column: fp8 current scaling assumed (same figures as the 25.11 "
            "FP8-CS rows)",
        )
    if system == "DGX-H100":
        return (
            "fp8-block",
            "parenthesised figure: 128x128 weight / 1x128 activation FP8 blocks (page footnote)",
        )
    return "mxfp8", "parenthesised figure: MXFP8 32x32 blocks (page footnote)"


def moe_note(label: str, ep: str, container: str) -> list[str]:
    """What the page says about a MoE row's routing. Its 25.09 footnote force-balances only the token-dropless
    runs, so a row labelled 'tokendrop' drops tokens past expert capacity and is not force-balanced."""
    if ep in ("", "n/a", "1"):
        return []
    if "tokendrop" in label:
        return [
            "MoE with token dropping (source label 'tokendrop'): tokens past expert capacity are dropped, "
            "and the page's force-balancing applies to its dropless runs only; capacity factor not stated"
        ]
    if container == "25.09":
        return ["MoE, token-dropless: tokens force-balanced across experts (page note)"]
    return [
        "MoE, token-dropless, tokens force-balanced across experts (page note: all MoE runs of this "
        "container)"
    ]


def megatron_bridge_rows(src: SourceTable) -> list[dict[str, str]]:
    out = []
    for i, raw in enumerate(src.rows, start=1):
        for r, which in mb_variants(raw):
            label = raw["model"].split(" (")[0]
            gpu, gpn = SYSTEMS[r["system"]]
            precision, pnote = mb_precision(r["system"], r["precision"], which)
            note = [n for n in (pnote, SAME_ARCH_NOTE if label in SAME_ARCH else "") if n]
            if "(" in raw["model"]:
                note.append("source label: " + raw["model"])
            note += moe_note(raw["model"], r["ep"], r["container"])
            if gpn == 4:
                note.append("NVL72 rack: 4 GPUs per compute tray, 72 GPUs in one NVLink domain")
            row = base_row(
                src,
                "vendor",
                "tokens/s",
                model=MODELS[label],
                source_model=raw["model"],
                gpu=gpu,
                source_gpu=r["system"],
                count=r["gpus"],
                precision=precision,
                tp=r["tp"],
                pp=r["pp"],
                cp=r["cp"],
                ep=r["ep"] if r["ep"] != "n/a" else "1",
                vp=r["vp"] if r["vp"] != "n/a" else "1",
                sharding="fsdp-full" if r["fsdp"] == "1" else "ddp",
                micro_batch=r["mbs"],
                global_batch=r["gbs"],
                grad_accum=r["ga"],
                seq_len=r["seq_len"],
                task="pretrain",
                stack="megatron",
                software=f"NeMo {r['container']} container (Megatron-Bridge)",
                row_ref=f"{r['container']} {r['system']} row {i} ({raw['model']}, {which})",
                note="; ".join(note),
            )
            out.append(finish(row, float(r["tokens_per_s_per_gpu"]), number(r["model_tflops_per_gpu"]), gpn))
    return out


def recompute(text: str) -> str:
    t = text.lower()
    return "none" if t in ("no", "false") else "full" if t in ("full", "true") else "selective"


def torchtitan_a100_rows(src: SourceTable) -> list[dict[str, str]]:
    out = []
    for i, r in enumerate(src.rows, start=1):
        llama3 = r["table"] == "llama3"
        size = r["model"]
        model = {"8B": "llama-3.1-8b", "70B": "llama-3.1-70b"}[size] if llama3 else f"llama-2-{size.lower()}"
        note = [
            "A100 80GB form factor not stated (SXM assumed)",
            "precision not stated: bf16 is torchtitan's default mixed precision",
            f"activation checkpointing: {r['activation_checkpointing']}",
        ]
        if llama3:
            note.insert(0, SAME_ARCH_NOTE)
        mb = int(r["batch_size"])
        row = base_row(
            src,
            "vendor",
            "tokens/s",
            model=model,
            source_model=f"Llama {'3' if llama3 else '2'} {size}",
            gpu="a100-80gb-sxm",
            source_gpu="A100 (80GB)",
            count=64,
            precision="bf16",
            tp=1,
            pp=1,
            cp=1,
            ep=1,
            vp=1,
            sharding="fsdp-full",
            recompute=recompute(r["activation_checkpointing"]),
            micro_batch=mb,
            global_batch=mb * 64,
            grad_accum=1,
            seq_len=8192 if llama3 else 4096,
            task="pretrain",
            stack="torchtitan",
            software="torchtitan FSDP2 (2024)",
            reported_mfu=fmt(number(r["mfu"])),
            row_ref=f"{r['table']} table row {i}",
            note="; ".join(note),
        )
        out.append(finish(row, float(r["wps"]), None, 8))
    return out


def titan_batches(r: dict[str, str]) -> tuple[int, int, int, list[str]]:
    """Micro-batch, gradient accumulation and global batch of a torchtitan H100 row. torchtitan 9dec370 has no
    gradient accumulation; under PP it splits the local batch into microbatches, by default one per stage
    (--experimental.pipeline_parallel_microbatches, default None -> pp degree, pipeline_llama.py)."""
    local, pp, fsdp = int(r["local_batch"]), int(r["pp"]), int(r["fsdp"])
    note = []
    gbs = int(r["global_batch"]) if r["global_batch"] else local * fsdp
    if not r["global_batch"]:
        note.append("global batch = local batch x FSDP degree (the relation the page's other tables state)")
    if pp == 1:
        return local, 1, gbs, note
    note.append(
        f"local batch {local} split into {pp} pipeline microbatches of {local // pp} (torchtitan 9dec370's "
        f"default of one microbatch per stage; the page does not say it was changed)"
    )
    return local // pp, pp, gbs, note


def torchtitan_h100_rows(src: SourceTable) -> list[dict[str, str]]:
    out = []
    sizes = {"8B": "llama-3.1-8b", "70B": "llama-3.1-70b", "405B": "llama-3.1-405b"}
    for i, r in enumerate(src.rows, start=1):
        note = [
            "H100 96GB HBM2e (2.4 TB/s) at the hosts' default 500 W power limit (Grand Teton)",
            f"techniques: {r['techniques']}",
        ]
        seq = r["seq_len"]
        if not seq:
            seq = "8192"
            note.append("sequence length not stated in the table: 8192, torchtitan's Llama 3.1 default")
        fp8 = "Float8" in r["techniques"]
        if fp8:
            note.append("Float8 on nn.Linear only, the rest bf16")
        mb, ga, gbs, batch_note = titan_batches(r)
        row = base_row(
            src,
            "vendor",
            "tokens/s",
            model=sizes[r["model"]],
            source_model=f"Llama 3.1 {r['model']}",
            gpu="h100-sxm-96gb-500w",
            source_gpu="H100 96GB HBM2e (Grand Teton)",
            count=r["gpus"],
            precision="fp8" if fp8 else "bf16",
            tp=r["tp"],
            pp=r["pp"],
            cp=r["cp"],
            ep=1,
            vp=2 if "Interleaved" in r["techniques"] else 1,
            sharding="fsdp-full",
            recompute=recompute(r["activation_checkpointing"]),
            micro_batch=mb,
            global_batch=gbs,
            grad_accum=ga,
            seq_len=seq,
            task="pretrain",
            stack="torchtitan",
            software="torchtitan 9dec370, torch 1963fc8 (2024-12)",
            memory_gib=r["memory_gib"],
            row_ref=f"Table {r['table']} row {i}",
            note="; ".join(note + batch_note),
        )
        out.append(finish(row, float(r["tps_per_gpu"]), None, 8))
    return out


def fms_rows(src: SourceTable) -> list[dict[str, str]]:
    out = []
    for i, r in enumerate(src.rows, start=1):
        size = r["model_size"]
        note = [
            "A100 variant not stated (80GB SXM assumed)",
            "precision not stated (bf16 assumed)",
            f"activation checkpointing: {r['activation_checkpointing']}",
        ]
        ckpt = r["activation_checkpointing"].lower() == "true"
        if ckpt:
            note.append("recompute left empty: checkpointing is on but the README does not say which layers")
        if size == "34b":
            note.append("Llama 2 34B shape (not released by Meta; code-llama-34b-like)")
        row = base_row(
            src,
            "independent",
            "tokens/s",
            model=f"llama-2-{size}",
            source_model=f"Llama2 {size}",
            gpu="a100-80gb-sxm",
            source_gpu="A100",
            count=r["gpus"],
            precision="bf16",
            tp=1,
            pp=1,
            cp=1,
            ep=1,
            vp=1,
            sharding="hsdp" if r["sharding"] == "HSDP" else "fsdp-full",
            recompute="" if ckpt else "none",
            micro_batch=r["batch_size"],
            seq_len=4096,
            task="pretrain",
            stack="pytorch-fsdp",
            software="fms-fsdp (PyTorch FSDP, SDPA)",
            row_ref=f"README table row {i} ({size})",
            note="; ".join(note),
        )
        out.append(finish(row, float(r["tokens_per_s_per_gpu"]), None, 8))
    return out


def h200_rows(src: SourceTable) -> list[dict[str, str]]:
    """This repository's own single-H200 measurements (HF-style training loop, eager modules with SDPA)."""
    out = []
    modes = {
        "mixed": "fp32 weights (master copy) + bf16 autocast, fused AdamW (HF Trainer default with "
        "bf16=True)",
        "pure-bf16": "bf16 weights and AdamW states (no master copy)",
        "lora": "LoRA r=16 on all linear layers over bf16 weights (PEFT)",
    }
    for i, r in enumerate(src.rows, start=1):
        mb, seq = int(r["micro_batch"]), int(r["seq_len"])
        row = base_row(
            src,
            "independent",
            "tokens/s",
            model=r["model"],
            source_model=r["model"],
            gpu="h200",
            source_gpu="NVIDIA H200",
            count=1,
            precision="bf16",
            tp=1,
            pp=1,
            cp=1,
            ep=1,
            vp=1,
            sharding="",
            recompute="full" if r["grad_ckpt"] == "true" else "none",
            micro_batch=mb,
            global_batch=mb,
            grad_accum=1,
            seq_len=seq,
            task="lora" if r["mode"] == "lora" else "finetune",
            stack="hf",
            software="torch 2.11.0+cu130, transformers 5.17.0 (sdpa)",
            memory_gib=fmt(float(r["peak_reserved_gb"]) * 1e9 / 2**30),
            row_ref=f"row {i} ({r['model']} {r['mode']}, seq {seq}, mb {mb}"
            f"{', checkpointing' if r['grad_ckpt'] == 'true' else ''})",
            note=f"{modes[r['mode']]}; random tokens, step includes the optimizer",
        )
        out.append(finish(row, float(r["tokens_per_s"]), None, 8))
    return out


READERS = {
    "train_nemo_24.07.csv": nemo_rows,
    "train_megatron_bridge.csv": megatron_bridge_rows,
    "train_torchtitan_a100.csv": torchtitan_a100_rows,
    "train_torchtitan_h100.csv": torchtitan_h100_rows,
    "train_fms_fsdp.csv": fms_rows,
    "train_gpu_advisor_h200.csv": h200_rows,
}


def validate(rows: list[dict[str, str]]) -> None:
    for r in rows:
        where = f"{r['source']} {r['row_ref']}"
        if r["precision"] not in PRECISIONS or r["stack"] not in STACKS:
            raise SystemExit(f"{where}: precision {r['precision']!r} or stack {r['stack']!r} not accepted")
        if r["family"] not in FAMILIES or r["measured"] not in MEASURED:
            raise SystemExit(f"{where}: family {r['family']!r} or measured {r['measured']!r} not accepted")
        if not r["count"]:
            # Only end-to-end reports may leave the GPU count out (the model cards do not give it).
            if r["family"] != "report":
                raise SystemExit(f"{where}: GPU count missing outside a report row")
        elif int(r["count"]) % (int(r["tp"] or 1) * int(r["pp"] or 1) * int(r["cp"] or 1)):
            par = int(r["tp"] or 1) * int(r["pp"] or 1) * int(r["cp"] or 1)
            raise SystemExit(f"{where}: {r['count']} GPUs not divisible by tp*pp*cp = {par}")
        if float(r["tokens_per_s_per_gpu"]) <= 0:
            raise SystemExit(f"{where}: throughput must be positive")
        # The reported model FLOPs must at least cover 6 x 1e9 FLOPs per token (any model here is >1B).
        if r["model_flops_per_token"] and float(r["model_flops_per_token"]) < 6e9:
            raise SystemExit(f"{where}: implausible FLOPs per token {r['model_flops_per_token']}")


def mosaic_count() -> int:
    text = (ROOT / "knowledge" / "benchmarks.csv").read_text(encoding="utf-8")
    return sum(1 for line in text.splitlines() if "mosaicml/llm-foundry@" in line)


def held_out_overlap(rows: list[dict[str, str]]) -> Counter[str]:
    used = {r["source"].split("@")[0] for r in rows}
    text = (ROOT / "benchmarks" / "external_validation.csv").read_text(encoding="utf-8")
    return Counter(repo for line in text.splitlines()[1:] for repo in used if f",{repo}@" in line)


def origin(row: dict[str, str]) -> str:
    """The repository (or web page) a row comes from."""
    return row["source"].split("@")[0] if "@" in row["source"] else row["source"]


def implied_mfu(row: dict[str, str], gpus: dict[str, dict], models: dict[str, dict]) -> float | None:
    """tokens/s/GPU x (6 x active parameters + 6 s h L, causal attention; 6N alone where the sequence is not
    stated) / the catalogue BF16 (A100, H100...: = FP16) dense peak, whatever the run's precision: one
    convention for every source, so families compare (FP8 runs read high against it)."""
    gpu, model = gpus.get(row["gpu"]), models.get(row["model"])
    if gpu is None or model is None or "layers" not in model or not gpu["tflops"].get("bf16"):
        return None
    active = model.get("active_params") or model["params"]
    seq = int(row["seq_len"]) if row["seq_len"] else 0
    per_token = 6 * active + 6 * seq * model["hidden"] * model["layers"]
    return float(row["tokens_per_s_per_gpu"]) * per_token / (gpu["tflops"]["bf16"] * 1e12)


def report_families(rows: list[dict[str, str]]) -> None:
    """Rows, GPUs, model sizes, GPU counts and the median implied MFU per family and per source."""
    with (ROOT / "knowledge" / "gpus.toml").open("rb") as f:
        gpus = {g["id"]: g for g in tomllib.load(f)["gpu"]}
    with (ROOT / "knowledge" / "models.toml").open("rb") as f:
        models = {m["id"]: m for m in tomllib.load(f)["model"]}
    groups: dict[tuple[str, str], list[dict[str, str]]] = {}
    for r in rows:
        groups.setdefault((r["family"], ""), []).append(r)
        groups.setdefault((r["family"], origin(r)), []).append(r)
    print("family / source: rows, GPUs, params (B), GPU counts, median implied MFU vs the BF16 peak (rows)")
    for (family, src), group in sorted(groups.items()):
        mfus = [m for m in (implied_mfu(r, gpus, models) for r in group) if m is not None]
        sizes = [models[r["model"]]["params"] / 1e9 for r in group if r["model"] in models]
        counts = [int(r["count"]) for r in group if r["count"]]
        med = f"{statistics.median(mfus):.1%} ({len(mfus)})" if mfus else "-"
        span = f"{min(sizes):.4g}-{max(sizes):.4g}" if sizes else "-"
        cnt = f"{min(counts)}-{max(counts)}" if counts else "not stated"
        label = f"{family}" if not src else f"  {src}"
        gpu_ids = ",".join(sorted({r["gpu"] for r in group}))
        print(f"{label:<58} {len(group):4d}  {gpu_ids:<40} {span:<12} {cnt:<11} {med}")


def report(rows: list[dict[str, str]]) -> None:
    gpus, models = catalogue_ids("gpus.toml", "gpu"), catalogue_ids("models.toml", "model")
    print(f"{len(rows)} rows written to {OUT.relative_to(ROOT)}")
    print(
        f"  {mosaic_count():4d}  mosaicml/llm-foundry rows stay in knowledge/benchmarks.csv (family: vendor)"
    )
    usable = [r for r in rows if r["gpu"] in gpus and r["model"] in models and r["count"]]
    print(f"{len(usable)} rows have a GPU count and both GPU and model in the catalogue")
    print("GPUs not in gpus.toml:", dict(Counter(r["gpu"] for r in rows if r["gpu"] not in gpus)))
    print("models not in models.toml:", dict(Counter(r["model"] for r in rows if r["model"] not in models)))
    report_families(rows)
    overlap = held_out_overlap(rows)
    if overlap:
        print("external_validation.csv rows whose source now trains (remove them):", dict(overlap))


def build() -> list[dict[str, str]]:
    rows: list[dict[str, str]] = []
    for name, reader in {**READERS, **PAPER_READERS, **RUN_READERS}.items():
        rows += reader(read_source(SOURCES / name))
    validate(rows)
    return rows


def main(argv: list[str]) -> int:
    rows = build()
    if "--check" in argv:
        tmp = OUT.with_name(OUT.name + ".check")
        data = write_csv(tmp, COLUMNS, rows)
        tmp.unlink()
        same = OUT.exists() and OUT.read_bytes() == data
        print("llm_benchmarks.csv is " + ("up to date" if same else "OUT OF DATE: run the script"))
        return 0 if same else 1
    write_csv(OUT, COLUMNS, rows)
    report(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
