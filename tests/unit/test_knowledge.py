"""Unit tests of the knowledge base: completeness, aliases, sources, and rejection of bad files."""

from __future__ import annotations

import shutil
from importlib import resources
from pathlib import Path

import pytest

from advisor.catalog.loader import load_knowledge_from
from advisor.question.errors import InputError, KnowledgeError

REQUIRED_GPUS = [
    "t4",
    "a10",
    "a10g",
    "l4",
    "l40s",
    "a40",
    "v100-16gb",
    "v100-32gb",
    "a100-40gb-pcie",
    "a100-40gb-sxm",
    "a100-80gb-pcie",
    "a100-80gb-sxm",
    "h100-pcie",
    "h100-sxm",
    "h100-nvl",
    "h200",
    "gh200",
    "b200",
    "rtx-3090",
    "rtx-4090",
    "rtx-a6000",
    "rtx-6000-ada",
    "mi250x",
    "mi300x",
]
REQUIRED_MODELS = [
    "resnet50",
    "ssd300",
    "bert-base",
    "bert-large",
    "gnmt",
    "transformer-xl-base",
    "transformer-xl-large",
    "tacotron2",
    "waveglow",
    "ncf",
    "llama-2-7b",
    "llama-2-13b",
    "llama-2-70b",
    "llama-3.1-8b",
    "llama-3.1-70b",
    "llama-3.1-405b",
    "gpt3-175b",
    "mpt-7b",
    "mpt-30b",
    "mistral-7b",
    "mixtral-8x7b",
    "qwen2.5-72b",
    "vit-b16",
    "vit-l16",
    "mixtral-8x22b",
    "qwen3-30b-a3b",
    "qwen3-235b-a22b",
    "deepseek-v3",
    "qwen2.5-7b",
    "qwen2.5-32b",
    "llama-3.2-1b",
    "llama-3.2-3b",
    "gemma-2-9b",
    "gemma-2-27b",
]
REQUIRED_CHECKS = [
    "oom",
    "distributed-mismatch",
    "nccl-hang",
    "network",
    "compatibility",
    "underperformance",
    "cost-overrun",
    "preemption",
]


def test_required_gpus_models_and_checks(knowledge) -> None:
    assert set(REQUIRED_GPUS) <= {g.id for g in knowledge.gpus}
    assert set(REQUIRED_MODELS) <= {m.id for m in knowledge.models}
    assert set(REQUIRED_CHECKS) <= {e.id for e in knowledge.checklist}


@pytest.mark.parametrize(
    "alias,gpu_id",
    [
        ("A100 80GB SXM4", "a100-80gb-sxm"),
        ("H100 SXM5", "h100-sxm"),
        ("h100", "h100-sxm"),
        ("H100_SXM", "h100-sxm"),
        ("RTX A6000", "rtx-a6000"),
        ("MI300X", "mi300x"),
        ("L40S", "l40s"),
    ],
)
def test_gpu_aliases_resolve(knowledge, alias: str, gpu_id: str) -> None:
    assert knowledge.gpu(alias).id == gpu_id


def test_unknown_names_raise_one_line_input_errors(knowledge) -> None:
    with pytest.raises(InputError, match="unknown GPU 'h1000'; did you mean 'h100-sxm'"):
        knowledge.gpu("h1000")  # the nearest ids, not the whole catalogue
    with pytest.raises(InputError, match="unknown GPU 'zzz'; accepted: t4, "):
        knowledge.gpu("zzz")  # nothing near: every id
    with pytest.raises(InputError, match=r"unknown model 'llama3-8b'; did you mean 'llama-3\.1-8b'") as exc:
        knowledge.model("llama3-8b")
    assert exc.value.field == "model" and exc.value.structured


def test_dense_peaks_are_not_sparse(knowledge) -> None:
    h100 = knowledge.gpu("h100-sxm")
    assert h100.tflops.bf16 == pytest.approx(989, rel=0.01)  # 1979 is the 2:4 sparse figure
    assert knowledge.gpu("a100-80gb-sxm").tflops.bf16 == pytest.approx(312, rel=0.01)
    # GeForce: fp16 with fp32 accumulate (what mixed-precision training runs) is half the fp16-accumulate
    # peak.
    assert knowledge.gpu("rtx-4090").tflops.fp16 == pytest.approx(165.2, rel=0.01)


def test_every_figure_has_a_source(knowledge) -> None:
    for g in knowledge.gpus:
        assert g.field_sources, g.id
        assert all(knowledge.source(k) for k in g.field_sources.values()), g.id
    for m in knowledge.models:
        assert knowledge.source(m.source), m.id
    for o in knowledge.offers:
        assert knowledge.source(o.source) and o.date, (o.provider, o.instance)


def test_prices_cover_five_providers_with_spot(knowledge) -> None:
    providers = {o.provider for o in knowledge.offers}
    assert {"aws", "gcp", "lambda"} <= providers and len(providers) >= 5
    assert any(o.pricing == "spot" for o in knowledge.offers)


def test_checklist_entries_are_actionable(knowledge) -> None:
    for e in knowledge.checklist:
        assert len(e.steps) >= 5 and e.symptoms and e.sources, e.id
    oom = next(e for e in knowledge.checklist if e.id == "oom")
    assert any(t.value == 0.5 for t in oom.thresholds)  # the field guide's OOM frequency > 50%
    assert {"weights", "optimizer", "activations", "kv_cache"} <= set(oom.remedies)
    text = "\n".join(s.text for e in knowledge.checklist for s in e.steps)
    assert "horizontal_replication" not in text.replace("horizontal_replication parameter", "")


@pytest.fixture
def knowledge_copy(tmp_path: Path) -> Path:
    root = Path(str(resources.files("knowledge")))
    dest = tmp_path / "knowledge"
    shutil.copytree(root, dest, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    return dest


@pytest.mark.parametrize(
    "file,old,new,message",
    [
        (
            "gpus.toml",
            "memory_gb = 80.0",
            "memory_gb = -80.0",
            r"knowledge/gpus.toml: gpu\[\d+\] \(id '[a-z0-9-]+'\)\.memory_gb",
        ),
        (
            "gpus.toml",
            "memory_gb = 80.0",
            'memory_gb = 80.0\ncolour = "green"',
            r"gpus.toml: .*colour: Extra inputs",
        ),
        (
            "models.toml",
            "layers = 80",
            'layers = "eighty"',
            r"models.toml: model\[\d+\] \(id '[a-z0-9.-]+'\)\.layers",
        ),
        ("prices.toml", 'pricing = "spot"', 'pricing = "cheap"', r"prices.toml: offer\[\d+\]\.pricing"),
        (
            "rules.toml",
            'field = "plan.precision"',
            'field = "plan.colour"',
            r"rules.toml: .*unknown field 'plan.colour'",
        ),
        ("rules.toml", 'op = "eq"', 'op = "roughly"', r"rules.toml: rule\[\d+\]"),
        (
            "assumptions.toml",
            "headroom = { value = 0.0,",
            "headroom = { valu = 0.0,",
            r"assumptions.toml: memory.headroom",
        ),
        # A section of figures (a TypedDict, validated at the door): an unknown key and a missing one refused.
        (
            "assumptions.toml",
            "headroom = { value = 0.0,",
            'colour = { value = 1.0, unit = "x", source = "design" }\nheadroom = { value = 0.0,',
            r"assumptions.toml: memory.colour: Extra inputs",
        ),
        (
            "assumptions.toml",
            "pod_gpus = { value",
            "# pod_gpus = { value",
            r"assumptions.toml: network.pod_gpus",
        ),
        (
            "checklist.toml",
            'category = "memory"',
            'category = "vibes"',
            r"checklist.toml: entry\[\d+\] \(id 'oom'\)\.category",
        ),
    ],
)
def test_bad_knowledge_is_rejected_naming_file_and_field(
    knowledge_copy: Path, file: str, old: str, new: str, message: str
) -> None:
    path = knowledge_copy / file
    text = path.read_text()
    assert old in text, f"fixture edit needs {old!r} in {file}"
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(KnowledgeError, match=message):
        load_knowledge_from(knowledge_copy)


def test_unknown_source_key_is_rejected(knowledge_copy: Path) -> None:
    path = knowledge_copy / "prices.toml"
    text = path.read_text()
    path.write_text(text.replace('source = "skypilot-aws"', 'source = "my-uncle"', 1))
    with pytest.raises(KnowledgeError, match=r"unknown source key.*my-uncle"):
        load_knowledge_from(knowledge_copy)


def test_benchmark_rows_resolve_to_catalogue(knowledge) -> None:
    from advisor.catalog.benchmarks import benchmarks_of

    rows = benchmarks_of(knowledge)
    assert len(rows) > 2000
    for r in rows:
        gpu = knowledge.gpu(r.gpu)
        model = knowledge.model(r.workload)
        assert gpu.id == r.gpu and model.id == r.workload
        assert r.unit == (model.throughput_unit or "tokens/s"), (r.workload, r.unit)
        assert r.throughput > 0
