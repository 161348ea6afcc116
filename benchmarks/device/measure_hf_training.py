"""Measures peak GPU memory and training throughput of Hugging Face-style LLM training on the local GPU.

Run on a machine with a CUDA GPU, PyTorch and transformers (peft for the LoRA rows); no weights are
downloaded: models are built from their published config shapes with random initialisation, which has the
same memory and speed as the trained weights. Each experiment runs a few optimizer steps and records
torch's peak allocated and reserved bytes, the CUDA context, and tokens/s; an out-of-memory error is recorded
as outcome "oom". Results are JSON lines on stdout and in $OUT/results.jsonl (or ./results.jsonl).

The training loop follows what the Hugging Face Trainer does by default with `bf16=True`: fp32 weights
(master copy) with bf16 autocast, torch AdamW, the model's own loss (logits upcast to fp32), optional
gradient checkpointing; "pure-bf16" loads the weights in bf16 (no master copy, AdamW states in bf16).
"""

from __future__ import annotations

import gc
import json
import os
import sys
import time
from pathlib import Path

import torch

# Published shapes (config.json of the Hugging Face repos meta-llama/Llama-3.2-1B and
# meta-llama/Llama-3.1-8B).
SHAPES = {
    "llama-3.2-1b": dict(
        num_hidden_layers=16,
        hidden_size=2048,
        num_attention_heads=32,
        num_key_value_heads=8,
        intermediate_size=8192,
        vocab_size=128256,
        tie_word_embeddings=True,
        head_dim=64,
    ),
    "llama-3.1-8b": dict(
        num_hidden_layers=32,
        hidden_size=4096,
        num_attention_heads=32,
        num_key_value_heads=8,
        intermediate_size=14336,
        vocab_size=128256,
        tie_word_embeddings=False,
        head_dim=128,
    ),
}

# (model, mode, seq_len, micro_batch, gradient checkpointing)
EXPERIMENTS = [
    ("llama-3.2-1b", "mixed", 2048, 1, False),
    ("llama-3.2-1b", "mixed", 2048, 4, False),
    ("llama-3.2-1b", "mixed", 2048, 8, False),
    ("llama-3.2-1b", "mixed", 2048, 8, True),
    ("llama-3.2-1b", "mixed", 8192, 1, False),
    ("llama-3.2-1b", "mixed", 8192, 4, False),
    ("llama-3.2-1b", "mixed", 8192, 4, True),
    ("llama-3.2-1b", "mixed", 32768, 1, False),
    ("llama-3.2-1b", "mixed", 32768, 1, True),
    ("llama-3.2-1b", "pure-bf16", 4096, 4, False),
    ("llama-3.1-8b", "lora", 2048, 1, False),
    ("llama-3.1-8b", "lora", 2048, 4, False),
    ("llama-3.1-8b", "lora", 8192, 1, False),
    ("llama-3.1-8b", "lora", 8192, 1, True),
    ("llama-3.1-8b", "lora", 32768, 1, False),
    ("llama-3.1-8b", "lora", 32768, 1, True),
    ("llama-3.1-8b", "lora", 65536, 1, True),
    ("llama-3.1-8b", "pure-bf16", 2048, 1, True),
    ("llama-3.1-8b", "pure-bf16", 4096, 2, True),
    ("llama-3.1-8b", "pure-bf16", 4096, 4, False),
    ("llama-3.1-8b", "mixed", 2048, 1, True),
    ("llama-3.1-8b", "mixed", 1024, 1, False),
]
# (model, mode, micro_batch, gradient checkpointing): the longest sequence (a multiple of 1024) that trains.
# The bounds, in units of 1024 tokens, come from the fixed experiments above (lo trained, hi did not or is
# far beyond), which keeps the bisection to a few trials.
LONGEST = [
    ("llama-3.1-8b", "lora", 1, False, 8, 32),
    ("llama-3.1-8b", "lora", 1, True, 32, 64),
    ("llama-3.2-1b", "mixed", 1, False, 8, 32),
    ("llama-3.2-1b", "mixed", 1, True, 32, 160),
    ("llama-3.1-8b", "pure-bf16", 1, True, 8, 64),
]
BUDGET_S = float(os.environ.get("MEASURE_BUDGET_S", "400"))
STEPS = int(os.environ.get("MEASURE_STEPS", "3"))  # one warm-up step, then timed steps


def build(name: str, mode: str):
    from transformers import AutoConfig, AutoModelForCausalLM

    cfg = AutoConfig.for_model(
        "llama", **SHAPES[name], max_position_embeddings=131072, attn_implementation="sdpa"
    )
    dtype = torch.bfloat16 if mode in ("pure-bf16", "lora") else torch.float32
    torch.set_default_dtype(dtype)
    try:
        with torch.device("cuda"):
            try:
                model = AutoModelForCausalLM.from_config(cfg, dtype=dtype)
            except TypeError:  # transformers before 4.56 names it torch_dtype
                model = AutoModelForCausalLM.from_config(cfg, torch_dtype=dtype)
    finally:
        torch.set_default_dtype(torch.float32)
    if mode == "lora":
        from peft import LoraConfig, get_peft_model

        targets = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
        model = get_peft_model(
            model, LoraConfig(r=16, lora_alpha=32, target_modules=targets, lora_dropout=0.0)
        )
    return model


def run_one(name: str, mode: str, seq: int, mb: int, gc_on: bool) -> dict:
    row = dict(
        model=name, mode=mode, seq_len=seq, micro_batch=mb, grad_ckpt=gc_on, gpu=torch.cuda.get_device_name()
    )
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    model = opt = None
    try:
        model = build(name, mode)
        params = sum(p.numel() for p in model.parameters())
        trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
        row.update(params=params, trainable=trainable)
        if gc_on:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
            if mode == "lora":
                model.enable_input_require_grads()
        model.config.use_cache = False
        model.train()
        opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5, fused=True)
        ids = torch.randint(0, SHAPES[name]["vocab_size"], (mb, seq), device="cuda")
        times = []
        for step in range(STEPS):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=(mode == "mixed")):
                loss = model(input_ids=ids, labels=ids).loss
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            torch.cuda.synchronize()
            if step:
                times.append(time.perf_counter() - t0)
        step_s = sum(times) / len(times)
        row.update(outcome="fits", step_s=round(step_s, 4), tokens_per_s=round(mb * seq / step_s, 1))
    except torch.OutOfMemoryError:
        row.update(outcome="oom")
    finally:
        row.update(
            peak_allocated_gb=round(torch.cuda.max_memory_allocated() / 1e9, 3),
            peak_reserved_gb=round(torch.cuda.max_memory_reserved() / 1e9, 3),
        )
        del model, opt
        gc.collect()
        torch.cuda.empty_cache()
    return row


def longest_sequence(
    name: str, mode: str, mb: int, gc_on: bool, lo: int, hi: int, *, start: float, fh
) -> dict:
    """Bisect over sequence lengths (multiples of 1024) for the longest one whose steps complete."""
    trials = []
    while hi - lo > 1 and time.perf_counter() - start < BUDGET_S:
        mid = (lo + hi) // 2
        row = run_one(name, mode, mid * 1024, mb, gc_on)
        trials.append(
            dict(
                seq_len=mid * 1024,
                outcome=row.get("outcome", "error"),
                peak_allocated_gb=row.get("peak_allocated_gb"),
            )
        )
        fh.write(json.dumps(dict(row, kind="trial")) + "\n")
        if row.get("outcome") == "fits":
            lo = mid
        else:
            hi = mid
    return dict(
        kind="longest",
        model=name,
        mode=mode,
        micro_batch=mb,
        grad_ckpt=gc_on,
        longest_fitting_seq_len=lo * 1024,
        first_failing_seq_len=hi * 1024,
        trials=trials,
        converged=hi - lo <= 1,
        gpu=torch.cuda.get_device_name(),
    )


def main() -> int:
    out = Path(os.environ.get("OUT", ".")) / "results.jsonl"
    torch.cuda.init()
    free, total = torch.cuda.mem_get_info()
    env = dict(
        kind="env",
        gpu=torch.cuda.get_device_name(),
        torch=torch.__version__,
        total_gb=round(total / 1e9, 3),
        context_gb=round((total - free) / 1e9, 3),
    )
    try:
        import transformers

        env["transformers"] = transformers.__version__
        import peft

        env["peft"] = peft.__version__
    except ImportError as exc:
        env["import_error"] = str(exc)
    start = time.perf_counter()
    with out.open("w") as fh:
        for line in [env]:
            print(json.dumps(line), flush=True)
            fh.write(json.dumps(line) + "\n")
        experiments = EXPERIMENTS if os.environ.get("MEASURE") != "longest" else []
        for spec in LONGEST if os.environ.get("MEASURE") == "longest" else []:
            row = longest_sequence(*spec, start=start, fh=fh)
            row["elapsed_s"] = round(time.perf_counter() - start, 1)
            print(json.dumps(row), flush=True)
            fh.write(json.dumps(row) + "\n")
            fh.flush()
        for exp in experiments:
            if time.perf_counter() - start > BUDGET_S:
                print(json.dumps(dict(kind="skipped", experiment=exp)), flush=True)
                continue
            try:
                row = run_one(*exp)
            except Exception as exc:  # noqa: BLE001 - one broken experiment must not lose the others
                row = dict(experiment=list(exp), error=f"{type(exc).__name__}: {exc}"[:300])
            row["elapsed_s"] = round(time.perf_counter() - start, 1)
            print(json.dumps(row), flush=True)
            fh.write(json.dumps(row) + "\n")
            fh.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
