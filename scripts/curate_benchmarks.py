#!/usr/bin/env python3
"""Build knowledge/benchmarks.csv from the raw tables in ../shared/data/ (standard library only).

Run from anywhere:  python scripts/curate_benchmarks.py
It reads <repo>/../shared/data/, writes <repo>/knowledge/benchmarks.csv deterministically (same input,
same bytes) and prints a summary: rows kept, rows left out by reason, and the run-to-run spread of the
repeated H100 SXM v2 host runs (the noise floor of any model fitted to these rows).

Sources (cited by their original repository path, never by the shared folder):
  * Lambda, lambdal/deeplearning-benchmark @ aa5addb6 (HEAD, v1 files, csv_v1_v2 merge, v2 raw files)
  * Lambda, lambdal/deeplearning-benchmark @ 67a9bb51 (2022-07-06 snapshot)
  * MosaicML, mosaicml/llm-foundry @ 8c8dd48f, scripts/train/benchmarking/README.md tables
"""

from __future__ import annotations

import csv
import io
import re
import statistics
import sys
from collections import Counter, defaultdict
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
OUT = ROOT / "knowledge" / "benchmarks.csv"

COLUMNS = [
    "workload",
    "gpu",
    "count",
    "nodes",
    "precision",
    "batch_per_gpu",
    "seq_len",
    "throughput",
    "unit",
    "grad_accum",
    "sharding",
    "recompute",
    "reported_mfu",
    "software",
    "source",
    "row_ref",
    "note",
]

LAMBDA_REPO = "lambdal/deeplearning-benchmark"
HEAD = "aa5addb6a53675a649a80036dad548f1c27cbcc4"
SNAP2022 = "67a9bb5128d51299376bc72e02ec7459f82efe38"
MOSAIC_SOURCE = (
    "mosaicml/llm-foundry@8c8dd48f72168c5d51e2f7b151595892a8fba43d:scripts/train/benchmarking/README.md"
)

SW_V1 = "NGC pytorch:22.09"
SW_V2 = "NGC pytorch:24.03/24.10 (v2)"  # Lambda's v2 run guides name both containers, see report
SW_2022 = "NGC pytorch 20.01/20.10"
SW_MOSAIC = "Composer/llm-foundry FSDP (2023)"

# Lambda column -> (workload id, unit). maskrcnn (2022 snapshot) has no catalogue model: left out.
LAMBDA_WORKLOADS = {
    "resnet50": ("resnet50", "images/s"),
    "ssd": ("ssd300", "images/s"),
    "bert_base_squad": ("bert-base", "sequences/s"),
    "bert_large_squad": ("bert-large", "sequences/s"),
    "gnmt": ("gnmt", "tokens/s"),
    "ncf": ("ncf", "samples/s"),
    "tacotron2": ("tacotron2", "mel frames/s"),
    "waveglow": ("waveglow", "audio samples/s"),
    "transformerxlbase": ("transformer-xl-base", "tokens/s"),
    "transformerxllarge": ("transformer-xl-large", "tokens/s"),
}
SKIPPED_COLUMNS = {"maskrcnn"}
# DeepLearningExamples' BERT scripts/run_squad.sh hard-codes --max_seq_length=384 (Lambda passes none).
BERT_SEQ_LEN = 384

# Volta/Turing: Lambda's fp32 runs are true FP32; Ampere and newer run TF32 (NGC default).
PRE_AMPERE = {
    "v100-16gb",
    "v100-32gb",
    "quadro-rtx-8000",
    "quadro-rtx-6000",
    "quadro-rtx-5000",
    "titan-rtx",
    "rtx-2080ti",
}

HOST_PREFIXES = (
    "LambdaCloud ",
    "Lambda Cloud — ",
    "Linode Cloud — ",
    "DellTexas ",
    "Dell ",
    "SMC ",
    "1CC ",
    "RAIDZ1 ",
)

# System label (host prefix and "<N>x " removed) -> (gpu id, note); None = GPU not in the catalogue.
LABEL_GPU = {
    "Quadro RTX 8000": ("quadro-rtx-8000", ""),
    "Quadro RTX 8000 V1": ("quadro-rtx-8000", "Lambda config v1 (NGC 20.10 or later)"),
    "RTX Quadro 8000": ("quadro-rtx-8000", "no NVLink"),
    "RTX Quadro 8000 NVLink": ("quadro-rtx-8000", "NVLink bridge"),
    "Quadro RTX 6000": ("quadro-rtx-6000", ""),
    "Quadro RTX 5000": ("quadro-rtx-5000", ""),
    "Titan RTX": ("titan-rtx", ""),
    "RTX 2080Ti": ("rtx-2080ti", ""),
    "RTX 2080Ti NVLink": ("rtx-2080ti", "NVLink bridge"),
    "V100 16GB": ("v100-16gb", ""),
    "V100 32GB": ("v100-32gb", ""),
    "p3.8xlarge": ("v100-16gb", "AWS p3.8xlarge (4x V100 16GB SXM2)"),
    "p3.16xlarge": ("v100-16gb", "AWS p3.16xlarge (8x V100 16GB SXM2)"),
    "p4d.24xlarge": ("a100-40gb-sxm", "AWS p4d.24xlarge (8x A100 40GB SXM4)"),
    "A10": ("a10", ""),
    "A100 40GB PCIe": ("a100-40gb-pcie", ""),
    "A100 40GB SXM4": ("a100-40gb-sxm", ""),
    "A100 80GB PCIe": ("a100-80gb-pcie", ""),
    "A100 80GB SXM4": ("a100-80gb-sxm", ""),
    "RTX A40": ("a40", ""),
    "RTX A6000": ("rtx-a6000", ""),
    "RTX A5500": ("rtx-a5500", ""),
    "RTX A5000": ("rtx-a5000", ""),
    "RTX A4500": ("rtx-a4500", ""),
    "RTX A4000": ("rtx-a4000", ""),
    "RTX 3070": ("rtx-3070", ""),
    "RTX 3080": ("rtx-3080", ""),
    "RTX 3090": ("rtx-3090", ""),
    "RTX 4090": ("rtx-4090", ""),
    "RTX 6000 Ada": ("rtx-6000-ada", ""),
    "H100 80GB PCIe Gen5": ("h100-pcie", ""),
    "H100 80GB PCIe": ("h100-pcie", ""),
    "H100 80GB SXM5": ("h100-sxm", ""),
    "GH200 96GB": ("gh200", "GH200 96GB"),
    "B200 192GB SXM5": ("b200", ""),
    # not in the GPU catalogue
    "GTX 1080Ti": None,
    "RTX 2080 SUPER MAX-Q": None,
    "RTX 2080 MAX-Q": None,
    "RTX 2070 MAX-Q": None,
    "RTX 3080 Max-Q": None,
}

# v2 raw run names: <site>_<N>x<GPU>_<mem>_<form>_<host>_v2
V2_RUN = re.compile(r"_(\d+)x(GH200|H200|H100|B200)_(\d+)GB(?:_(SXM5?|PCIe))?_")

NOISY_NOTE = "data-loader bound, scales unevenly"
SUPERLINEAR_LIMIT = 1.5  # per-GPU throughput above 1.5x the best 1-GPU figure: implausible
SUPERLINEAR_FLAG = 1.15  # kept, but the row says so
FP16_VS_FP32_LIMIT = 0.5  # mixed precision at under half the fp32 throughput: implausible


def lambda_source(commit: str, path: str) -> str:
    return f"{LAMBDA_REPO}@{commit}:{path}"


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def num(text: str) -> float:
    return float(text) if text.strip() else 0.0


def fmt_num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(x)


def split_label(label: str) -> tuple[str, str, int | None]:
    """'Dell 8x H100 80GB SXM5' -> ('Dell', 'H100 80GB SXM5', 8)."""
    host = ""
    rest = label.strip()
    for p in HOST_PREFIXES:
        if rest.startswith(p):
            host, rest = p.strip(" —"), rest[len(p) :]
            break
    m = re.match(r"^(\d+)x\s*(.*)$", rest)
    n = None
    if m:
        n, rest = int(m.group(1)), m.group(2)
    return host, rest, n


class Dropped:
    """Counts what is left out, by reason, with examples for the report."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.detail: dict[str, Counter[str]] = defaultdict(Counter)

    def add(self, reason: str, what: str, n: int = 1) -> None:
        self.counts[reason] += n
        self.detail[reason][what] += n


DROPPED = Dropped()


# ---------------------------------------------------------------------------------------------- Lambda
def lambda_cells(thr_path: Path, bs_path: Path | None, *, raw_v2: bool = False):
    """Yield one dict per non-empty throughput cell of a Lambda throughput file."""
    rows = read_csv(thr_path)
    bs_rows = {}
    if bs_path is not None:
        for r in read_csv(bs_path):
            bs_rows[r["name_gpu"].strip()] = r
    for r in rows:
        if raw_v2:
            label = r[""].strip()
            m = V2_RUN.search(label)
            if not m:
                raise SystemExit(f"unparsed v2 run name: {label}")
            count, model, mem, form = int(m.group(1)), m.group(2), int(m.group(3)), m.group(4) or ""
            gpu = {"GH200": "gh200", "H200": "h200", "B200": "b200"}.get(model)
            if model == "H100":
                gpu = "h100-pcie" if form == "PCIe" else "h100-sxm"
            base_note = ""
            if model == "GH200":
                base_note = f"GH200 {mem}GB"
            elif model == "H200":
                base_note = "H200 141GB (run name says 140GB)"
            if "HTOff" in label:
                base_note = "; ".join(x for x in (base_note, "hyper-threading off") if x)
            host = ""
        else:
            label = r["name_gpu"].strip()
            host, core, n_label = split_label(label)
            count = int(float(r["num_gpu"]))
            if n_label is not None and n_label != count and core not in ("p3.8xlarge", "p3.16xlarge"):
                raise SystemExit(f"count mismatch in {thr_path}: {label}")
            if core not in LABEL_GPU:
                raise SystemExit(f"unmapped GPU label in {thr_path}: {label!r}")
            mapped = LABEL_GPU[core]
            gpu, base_note = (None, "") if mapped is None else mapped
            # the 2022 bs files spell the multi-GPU Quadro rows "Quadro RTX 8000", the throughput files
            # "RTX Quadro 8000"; everything else matches by label
            bs_row = bs_rows.get(label.replace("RTX Quadro 8000", "Quadro RTX 8000"))
            if bs_path is not None and bs_row is None:
                raise SystemExit(f"no batch-size row for {label} in {bs_path}")
        for col, val in r.items():
            if col in ("", "name_gpu", "num_gpu", "watt", "price"):
                continue
            if col in SKIPPED_COLUMNS:
                if num(val) > 0:
                    DROPPED.add("maskrcnn column (no catalogue model)", thr_path.parent.parent.name)
                continue
            workload, unit = LAMBDA_WORKLOADS[col]
            bs_global = None
            if not raw_v2:
                bs_global = int(float(bs_row[col]))
            yield {
                "label": label,
                "host": host,
                "gpu": gpu,
                "count": count,
                "col": col,
                "workload": workload,
                "unit": unit,
                "throughput": num(val),
                "bs_global": bs_global,
                "base_note": base_note,
            }


def collect_lambda():
    """Return the kept Lambda rows (dicts with COLUMNS keys) and the H100 v2 host runs for the spread."""
    base = DATA / "lambdal-deeplearning-benchmark"
    head = base / "HEAD-aa5addb6" / "pytorch"
    snap = base / "2022-07-06-67a9bb51" / "pytorch"

    groups = []  # (kind, commit, path in repo, throughput file, bs file, software)
    for prec in ("fp16", "fp32"):
        groups.append(
            (
                "v1",
                HEAD,
                f"pytorch/pytorch-train-throughput-{prec}.csv",
                head / f"pytorch-train-throughput-{prec}.csv",
                head / f"pytorch-train-bs-{prec}.csv",
                SW_V1,
                prec,
            )
        )
        groups.append(
            (
                "merged",
                HEAD,
                f"pytorch/csv_v1_v2/pytorch-train-throughput-{prec}.csv",
                head / "csv_v1_v2" / f"pytorch-train-throughput-{prec}.csv",
                head / "csv_v1_v2" / f"pytorch-train-bs-{prec}.csv",
                SW_V2,
                prec,
            )
        )
        groups.append(
            (
                "v2raw",
                HEAD,
                f"pytorch/pytorch-train-throughput-v2-{prec}.csv",
                head / f"pytorch-train-throughput-v2-{prec}.csv",
                None,
                SW_V2,
                prec,
            )
        )
        groups.append(
            (
                "2022",
                SNAP2022,
                f"pytorch/pytorch-train-throughput-{prec}.csv",
                snap / f"pytorch-train-throughput-{prec}.csv",
                snap / f"pytorch-train-bs-{prec}.csv",
                SW_2022,
                prec,
            )
        )

    # GPUs (by gpu id) that the v1 files cover; the merged file is used only for the others.
    v1_gpus = set()
    for kind, _, _, thr, bs, _, _ in groups:
        if kind == "v1":
            v1_gpus |= {c["gpu"] for c in lambda_cells(thr, bs) if c["gpu"]}
    merged_gpus = set()
    for kind, _, _, thr, bs, _, _ in groups:
        if kind == "merged":
            merged_gpus |= {c["gpu"] for c in lambda_cells(thr, bs) if c["gpu"]}
    # merged-file batches for v2 raw rows, keyed by (gpu label core, count)
    merged_bs: dict[tuple[str, str, int, str], int] = {}
    for kind, _, _, thr, bs, _, prec in groups:
        if kind == "merged":
            for c in lambda_cells(thr, bs):
                core = split_label(c["label"])[1]
                merged_bs[(core, c["col"], c["count"], prec)] = c["bs_global"]

    spread_runs = []  # (precision, workload, count, throughput) of the H100 SXM v2 host runs
    cells = []
    for kind, commit, repo_path, thr, bs, software, prec in groups:
        source = lambda_source(commit, repo_path)
        for c in lambda_cells(thr, bs, raw_v2=(kind == "v2raw")):
            c.update(kind=kind, source=source, software=software, file_prec=prec)
            if kind == "v2raw" and c["gpu"] == "h100-sxm" and c["throughput"] > 0:
                spread_runs.append((prec, c["workload"], c["count"], c["throughput"]))
            cells.append(c)

    # fp32 throughput of the same system row, for the fp16-vs-fp32 test
    fp32_of = {
        (c["source"].replace("-fp32", "-fp16"), c["label"], c["col"]): c["throughput"]
        for c in cells
        if c["file_prec"] == "fp32"
    }

    # which cells are rows at all (before the plausibility tests)
    candidates = []
    for c in cells:
        if c["gpu"] is None:
            DROPPED.add("GPU not in the catalogue", split_label(c["label"])[1])
            continue
        if c["kind"] == "merged" and c["gpu"] in v1_gpus:
            # v1-era rows repeat the v1 files; H100 rows there are v2 runs of GPUs v1 covers
            DROPPED.add("csv_v1_v2 cell of a GPU the v1 files cover", c["gpu"])
            continue
        if c["kind"] == "v2raw":
            if c["gpu"] in v1_gpus:
                # repeated H100 hosts: used for the spread only
                DROPPED.add("v2 raw cell of a GPU the v1 files cover (H100 spread only)", c["gpu"])
                continue
            if c["gpu"] in merged_gpus and not c["base_note"].startswith("GH200 80GB"):
                # GH200 96GB and B200 runs: the merged file holds them (the GH200 96GB 'Test' host
                # run and its '_bk' rerun are further runs of that GPU)
                DROPPED.add("v2 raw cell of a GPU the csv_v1_v2 file covers", c["label"])
                continue
        if c["throughput"] <= 0:
            DROPPED.add("0.0 cell (not run or failed)", c["kind"])
            continue
        if c["workload"] == "ncf" and c["count"] > 1:
            DROPPED.add("ncf on a multi-GPU row", c["kind"])
            continue
        candidates.append(c)

    # single-GPU reference of the same GPU, workload and file
    singles: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for c in candidates:
        if c["count"] == 1:
            singles[(c["source"], c["gpu"], c["col"])].append(c["throughput"])

    rows = []
    for c in candidates:
        notes = [c["base_note"]] if c["base_note"] else []
        ref = singles.get((c["source"], c["gpu"], c["col"]))
        if c["count"] > 1 and ref:
            ratio = c["throughput"] / c["count"] / max(ref)
            if ratio > SUPERLINEAR_LIMIT:
                DROPPED.add(
                    "implausible: per-GPU > 1.5x best 1-GPU figure",
                    f"{c['workload']} {c['gpu']} x{c['count']} {c['file_prec']} ({ratio:.2f}x)",
                )
                continue
            if c["throughput"] < min(ref):
                DROPPED.add(
                    "implausible: multi-GPU total below the 1-GPU figure",
                    f"{c['workload']} {c['gpu']} x{c['count']} {c['file_prec']} "
                    f"({c['throughput']:g} < {min(ref):g})",
                )
                continue
            if ratio > SUPERLINEAR_FLAG:
                notes.append(f"per-GPU {ratio:.2f}x the 1-GPU figure (superlinear)")
        if c["file_prec"] == "fp16":
            f32 = fp32_of.get((c["source"], c["label"], c["col"]))
            if f32 and c["throughput"] < FP16_VS_FP32_LIMIT * f32:
                DROPPED.add(
                    "implausible: fp16 below half the fp32 figure of the same run",
                    f"{c['workload']} {c['gpu']} x{c['count']} ({c['throughput']:g} vs fp32 {f32:g})",
                )
                continue

        # batch per GPU: Lambda's bs files hold the GLOBAL batch (see the report)
        batch = ""
        if c["kind"] == "v2raw":
            core = V2_RUN.search(c["label"])
            key_core = {"GH200": f"GH200 {core.group(3)}GB"}.get(core.group(2), "")
            gb = merged_bs.get((key_core, c["col"], c["count"], c["file_prec"])) if key_core else None
            if gb:
                batch = fmt_num(gb / c["count"])
            else:
                notes.append("batch unknown: no Lambda bs file for this v2 run")
        else:
            gb = c["bs_global"]
            if gb and gb > 0:
                per = gb / c["count"]
                batch = fmt_num(per) if per.is_integer() else f"{per:.2f}"
                if not per.is_integer():
                    notes.append(f"global batch {gb} not divisible by {c['count']}")
            else:
                notes.append("bs file gives 0 (Lambda's script writes a batch of 1 as 0)")

        if c["kind"] in ("merged", "v2raw"):
            notes.append("v2 run")
        if c["workload"] == "tacotron2":
            notes.append(NOISY_NOTE)
        if c["file_prec"] == "fp32" and c["gpu"] not in PRE_AMPERE:
            notes.append("fp32 file, TF32 by NGC default")
        precision = c["file_prec"]
        if precision == "fp32" and c["gpu"] not in PRE_AMPERE:
            precision = "tf32"

        rows.append(
            {
                "workload": c["workload"],
                "gpu": c["gpu"],
                "count": c["count"],
                "nodes": 1,
                "precision": precision,
                "batch_per_gpu": batch,
                "seq_len": BERT_SEQ_LEN if c["workload"].startswith("bert-") else 0,
                "throughput": fmt_num(c["throughput"]),
                "unit": c["unit"],
                "grad_accum": "",
                "sharding": "ddp" if c["count"] > 1 else "",
                "recompute": "",
                "reported_mfu": "",
                "software": c["software"],
                "source": c["source"],
                "row_ref": c["label"],
                "note": "; ".join(notes),
            }
        )
    return rows, spread_runs


# -------------------------------------------------------------------------------------------- MosaicML
def collect_mosaic():
    path = DATA / "mosaicml-llm-foundry" / "mpt_training_throughput_from_README.csv"
    rows = []
    index_in_section: Counter[str] = Counter()
    gpu_map = {"h100_80gb": "h100-sxm", "a100_80gb": "a100-80gb-sxm", "a100_40gb": "a100-40gb-sxm"}
    prec_map = {"amp_bf16": "bf16", "bf16": "bf16", "amp_fp8": "fp8"}
    shard_map = {"FULL_SHARD": "fsdp-full", "SHARD_GRAD_OP": "fsdp-grad-op"}
    for r in read_csv(path):
        section = r["Section"]
        index_in_section[section] += 1
        count = int(r["# GPUs"])
        if count % 8:
            raise SystemExit(f"MosaicML row with {count} GPUs is not whole nodes")
        notes = []
        if r["MP Mode"] != "DEFAULT":
            notes.append(f"FSDP mixed-precision mode {r['MP Mode']}")
        if r["Activation CPUOffload"] == "True":
            notes.append("activation CPU offload")
        if section.startswith("A100"):
            notes.append("inter-node 1600 Gbps RoCE")
        mfu = (Decimal(r["MFU"]) / 100).normalize()
        rows.append(
            {
                "workload": f"mpt-{r['Model']}",
                "gpu": gpu_map[r["GPU"]],
                "count": count,
                "nodes": count // 8,
                "precision": prec_map[r["Precision"]],
                "batch_per_gpu": r["MicroBatchSize"],
                "seq_len": int(r["SeqLen (T)"]),
                "throughput": r["Throughput (T/s)"],
                "unit": "tokens/s",
                "grad_accum": r["GradAccum"],
                "sharding": shard_map[r["Sharding Strategy"]],
                "recompute": "full" if r["Activation Checkpointing"] == "True" else "none",
                "reported_mfu": format(mfu, "f"),
                "software": SW_MOSAIC,
                "source": MOSAIC_SOURCE,
                "row_ref": f"{section}, row {index_in_section[section]} ({r['Model']}, {count} GPUs, "
                f"seq {r['SeqLen (T)']}, mb {r['MicroBatchSize']})",
                "note": "; ".join(notes),
            }
        )
    return rows


# -------------------------------------------------------------------------------------------- main
def quantile_spread(values: list[float]) -> tuple[float, float, int]:
    med = statistics.median(values)
    if len(values) < 2:
        return med, 0.0, len(values)
    q = statistics.quantiles(values, n=10, method="inclusive")
    return med, (q[8] - q[0]) / med, len(values)


def main() -> int:
    lambda_rows, spread_runs = collect_lambda()
    rows = lambda_rows + collect_mosaic()

    # exact repeats: the same table row (source, system label, workload, precision) given twice.
    # Different hosts or runs that happen to report the same figure are separate measurements: kept.
    seen = set()
    unique = []
    for r in rows:
        key = (r["source"], r["row_ref"], r["gpu"], r["count"], r["workload"], r["precision"])
        if key in seen:
            DROPPED.add("exact repeat", f"{r['workload']} {r['gpu']} x{r['count']}")
            continue
        seen.add(key)
        unique.append(r)
    rows = sorted(
        unique, key=lambda r: (r["source"], r["workload"], r["gpu"], r["count"], r["precision"], r["row_ref"])
    )

    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: r[k] for k in COLUMNS})
    OUT.write_bytes(buf.getvalue().encode("utf-8"))

    # ---- summary
    p = print
    p(f"wrote {OUT.relative_to(ROOT)}: {len(rows)} rows")
    for title, key in (("source", "source"), ("workload", "workload"), ("gpu", "gpu")):
        c = Counter(r[key] for r in rows)
        p(f"\nrows per {title}:")
        for k, v in sorted(c.items()):
            p(f"  {v:5d}  {k}")
    p("\nleft out:")
    for reason, n in sorted(DROPPED.counts.items()):
        p(f"  {n:5d}  {reason}")
        for what, m in sorted(DROPPED.detail[reason].items()):
            p(f"           {m:4d}  {what}")
    p("\nrun-to-run spread, H100 SXM v2 host runs (median; (P90-P10)/median; n):")
    groups: dict[tuple[str, str, int], list[float]] = defaultdict(list)
    for prec, wl, n, t in spread_runs:
        groups[(prec, wl, n)].append(t)
    for (prec, wl, n), vals in sorted(groups.items()):
        med, spread, k = quantile_spread(vals)
        p(f"  {prec} {wl:12s} x{n}: median {med:12.1f}  spread {spread * 100:6.2f}%  n={k}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
