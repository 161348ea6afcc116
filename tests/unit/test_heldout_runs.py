"""The seven held-out run sets parse: every row has a source and family, configs name catalogue ids."""

from __future__ import annotations

import csv
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from advisor.catalog import load_knowledge

ROOT = Path(__file__).resolve().parents[2]
TRAINING = ROOT / "benchmarks" / "heldout_training_runs.csv"
SERVING = ROOT / "benchmarks" / "heldout_serving_runs.csv"
# The sealed second set (docs/heldout.md): scored only at the end; its sources are unused by knowledge/.
TRAINING2 = ROOT / "benchmarks" / "heldout2_training_runs.csv"
SERVING2 = ROOT / "benchmarks" / "heldout2_serving_runs.csv"
# The sealed third set (docs/heldout.md): scored once, at the end; its sources are unused everywhere else.
TRAINING3 = ROOT / "benchmarks" / "heldout3_training_runs.csv"
SERVING3 = ROOT / "benchmarks" / "heldout3_serving_runs.csv"
# The sealed fourth set (docs/heldout.md): scored once, at the end; its sources are unused everywhere else.
TRAINING4 = ROOT / "benchmarks" / "heldout4_training_runs.csv"
SERVING4 = ROOT / "benchmarks" / "heldout4_serving_runs.csv"
# The sealed fifth set (docs/heldout.md): scored once, at the end; its sources are unused everywhere else.
TRAINING5 = ROOT / "benchmarks" / "heldout5_training_runs.csv"
SERVING5 = ROOT / "benchmarks" / "heldout5_serving_runs.csv"
# The sealed sixth set (docs/heldout.md): scored once, at the end of stop 38; sources unused elsewhere.
TRAINING6 = ROOT / "benchmarks" / "heldout6_training_runs.csv"
SERVING6 = ROOT / "benchmarks" / "heldout6_serving_runs.csv"
# The sealed seventh set (docs/heldout.md): scored once, at the end of stop 39; sources unused elsewhere.
TRAINING7 = ROOT / "benchmarks" / "heldout7_training_runs.csv"
SERVING7 = ROOT / "benchmarks" / "heldout7_serving_runs.csv"
TRAINING8 = ROOT / "benchmarks" / "heldout8_training_runs.csv"
SERVING8 = ROOT / "benchmarks" / "heldout8_serving_runs.csv"
# The sealed ninth set (docs/heldout.md): built and scored once in stop 41; sources unused elsewhere.
TRAINING9 = ROOT / "benchmarks" / "heldout9_training_runs.csv"
SERVING9 = ROOT / "benchmarks" / "heldout9_serving_runs.csv"
# The sealed tenth set's training half (docs/heldout.md): built in stop 42, scored once by the lead.
TRAINING10 = ROOT / "benchmarks" / "heldout10_training_runs.csv"
SERVING10 = ROOT / "benchmarks" / "heldout10_serving_runs.csv"
# The ninth set's floors (docs/heldout.md, "The sealed ninth set"): what it holds, so that a lost row fails
# (first pass 19 training / 25 serving rows from 7 origins; widened by heldout9b to 41 / 46 from 15 origins).
MIN_ORIGINS_9, MIN_SERVING_9 = 15, 46
MIN_TRAINING_9, MIN_TRAINING_SOURCES_9, MIN_TRAINING_FAMILIES_9 = 41, 8, 4
# The tenth set's training floors (docs/heldout.md, "The sealed tenth set"): a lost row fails (first pass 52
# runs from 7 publishers on 1-8 GPUs; widened by heldout10b to 73 from 10, up to 128 GPUs, with QLoRA).
MIN_TRAINING_10, MIN_TRAINING_SOURCES_10, MIN_TRAINING_FAMILIES_10, MIN_GPU_KINDS_10 = 73, 10, 4, 9
MAX_COUNT_10 = 128
# The eleventh set's training half (docs/heldout.md, "The sealed eleventh set"): built in stop 43,
# scored once by the lead. Its floors are what it holds, so that a lost row fails: 39 runs from 2
# publishers on 1 to 64 GPUs, widened by heldout11b to 60 runs from 10 sources in 3 families, up to
# 2,048 GPUs, with three layout groups (TP x PP at one count).
TRAINING11 = ROOT / "benchmarks" / "heldout11_training_runs.csv"
MIN_TRAINING_11, MIN_TRAINING_SOURCES_11, MIN_GPU_KINDS_11, MAX_COUNT_11 = 60, 10, 6, 2048
MIN_TRAINING_FAMILIES_11, MIN_LAYOUT_GROUPS_11 = 3, 3
SET_IDS = ["heldout", *(f"heldout{n}" for n in range(2, 10))]
LORA_TARGETS = {"all", "attention"}
FAMILIES = {"paper", "vendor-docs", "independent-blog", "toolkit-docs", "mlperf"}
WORKLOADS = {"pretrain", "finetune", "lora", "qlora"}
PRECISIONS = {"fp32", "tf32", "fp16", "bf16", "fp8", "int8", "int4"}
LOOPS = {"closed", "open", "offline", "static"}
SHAPE_KEYS = {"layers", "hidden", "heads", "kv_heads", "ffn", "vocab"}
PARAMS = re.compile(r"^\d+(\.\d+)?[KMBT]?$")  # a stated parameter count, e.g. 2.7B (held as --params)
LOAD_COLUMN = {"closed": "concurrency", "open": "request_rate", "static": "batch"}


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return [{k: (v or "").strip() for k, v in r.items()} for r in csv.DictReader(f)]


def _toml(name: str) -> dict:
    with (ROOT / "knowledge" / name).open("rb") as f:
        return tomllib.load(f)


@pytest.fixture(scope="module")
def catalogue() -> dict[str, set[str]]:
    knowledge = load_knowledge()
    return {
        "gpus": {g.id for g in knowledge.gpus},
        "models": {m.id for m in knowledge.models},
        "engines": set(_toml("serving_engines.toml")) - {"schema_version", "sources"},
        "stacks": set(_toml("training_stacks.toml")["stacks"]),
    }


def _check_common(row: dict[str, str], catalogue: dict[str, set[str]]) -> None:
    where = f"row {row['id']}"
    assert row["source"], f"{where}: no source"
    assert row["table"] or row["row_ref"], f"{where}: no table or row reference in its source"
    assert row["family"] in FAMILIES, f"{where}: family {row['family']!r}"
    assert row["gpu"] in catalogue["gpus"], f"{where}: GPU {row['gpu']!r} is not a catalogue id"
    assert int(row["count"]) >= 1
    if row["precision"]:
        assert row["precision"] in PRECISIONS, f"{where}: precision {row['precision']!r}"


def _check_model(row: dict[str, str], catalogue: dict[str, set[str]]) -> None:
    if row.get("model"):
        assert row["model"] in catalogue["models"], (
            f"row {row['id']}: model {row['model']!r} is not in the catalogue"
        )
        return
    if row.get("model_params"):
        assert PARAMS.match(row["model_params"]), f"row {row['id']}: parameter count {row['model_params']!r}"
        return
    shape = dict(part.split("=") for part in row.get("model_shape", "").split(";") if part)
    assert set(shape) >= SHAPE_KEYS, f"row {row['id']}: no catalogue model, parameter count or full shape"
    ffn_type = shape.pop("ffn_type", "gated")  # a plain two-matrix FFN (GPT-2/3, BLOOM) is marked plain
    assert ffn_type in {"gated", "plain"}, f"row {row['id']}: ffn_type {ffn_type!r}"
    assert all(int(v) > 0 for v in shape.values())


@pytest.mark.parametrize(
    "path",
    [TRAINING, TRAINING2, TRAINING3, TRAINING4, TRAINING5, TRAINING6, TRAINING7, TRAINING8, TRAINING9],
    ids=SET_IDS,
)
def test_training_rows_parse(catalogue: dict[str, set[str]], path: Path) -> None:
    rows = _rows(path)
    assert len({r["id"] for r in rows}) == len(rows), "row ids repeat"
    for row in rows:
        _check_common(row, catalogue)
        _check_model(row, catalogue)
        assert row["workload"] in WORKLOADS
        assert float(row["tokens_per_s_per_gpu"]) > 0
        assert float(row["tokens_per_s"]) == pytest.approx(
            float(row["tokens_per_s_per_gpu"]) * int(row["count"]), rel=0.01
        )
        if row["stack"]:
            assert row["stack"] in catalogue["stacks"], f"row {row['id']}: stack {row['stack']!r}"
        if row.get("lora_targets"):
            assert row["lora_targets"] in LORA_TARGETS, f"row {row['id']}: {row['lora_targets']!r}"
        ways = [int(row[k]) for k in ("tp", "pp", "cp", "dp") if row[k]]
        if len(ways) == 4:
            assert ways[0] * ways[1] * ways[2] * ways[3] == int(row["count"]), (
                f"row {row['id']}: layout != count"
            )
        if row.get("ep"):  # experts are spread within the data-parallel ranks
            assert int(row["count"]) % int(row["ep"]) == 0, f"row {row['id']}: ep does not divide the count"
        if row.get("master_weights"):
            assert row["master_weights"] in {"true", "false"}, f"row {row['id']}: {row['master_weights']!r}"


@pytest.mark.parametrize(
    "path",
    [SERVING, SERVING2, SERVING3, SERVING4, SERVING5, SERVING6, SERVING7, SERVING8, SERVING9],
    ids=SET_IDS,
)
def test_serving_rows_parse(catalogue: dict[str, set[str]], path: Path) -> None:
    rows = _rows(path)
    assert len({r["id"] for r in rows}) == len(rows), "row ids repeat"
    for row in rows:
        _check_common(row, catalogue)
        _check_model(row, catalogue)
        assert row["loop"] in LOOPS, f"row {row['id']}: loop {row['loop']!r}"
        if row["loop"] in LOAD_COLUMN:
            assert float(row[LOAD_COLUMN[row["loop"]]]) > 0, f"row {row['id']}: its load is missing"
        if row["engine"]:
            assert row["engine"] in catalogue["engines"], f"row {row['id']}: engine {row['engine']!r}"
        assert int(row["isl"]) > 0 and int(row["osl"]) > 0
        assert any(row[k] for k in ("output_tok_s", "ttft_ms", "tpot_ms")), (
            f"row {row['id']}: nothing measured"
        )


def _origin(source: str) -> str:
    """The repository (owner/name) or the URL without its query, which identifies a source."""
    return source.split("@")[0] if "@" in source and "://" not in source else source.split("?")[0]


def test_heldout_sources_are_not_in_the_knowledge() -> None:
    known = " ".join(
        r.get("source", "")
        for name in ("llm_benchmarks.csv", "serving_benchmarks.csv", "benchmarks.csv")
        for r in _rows(ROOT / "knowledge" / name)
    )
    held = {_origin(r["source"]) for r in _rows(TRAINING) + _rows(SERVING)}
    assert held, "no held-out sources"
    assert not [s for s in held if s in known], "a held-out source is also a training source"


def _text_of(paths: list[Path]) -> str:
    return "\n".join(p.read_text(encoding="utf-8", errors="ignore") for p in paths if p.is_file())


def test_heldout2_sources_appear_nowhere_in_knowledge_or_the_first_set() -> None:
    """The sealed set is held out from everything the model may be tuned on: no origin (repository or URL)
    of a heldout2 row appears in a file under knowledge/, in external_validation.csv or in the first set."""
    seen = _text_of(
        [p for p in (ROOT / "knowledge").rglob("*") if p.suffix in {".csv", ".toml", ".json", ".md"}]
        + [ROOT / "benchmarks" / "external_validation.csv", TRAINING, SERVING]
    )
    held = {_origin(r["source"]) for r in _rows(TRAINING2) + _rows(SERVING2)}
    assert len(held) >= 8, f"only {len(held)} distinct origins in the second set"
    leaked = sorted(s for s in held if s in seen)
    assert not leaked, f"heldout2 origins also used elsewhere: {leaked}"


def test_heldout2_source_ids_are_new() -> None:
    first = {r["source_id"] for r in _rows(TRAINING) + _rows(SERVING)}
    second = {r["source_id"] for r in _rows(TRAINING2) + _rows(SERVING2)}
    assert not first & second, f"source ids shared with the first set: {sorted(first & second)}"


def test_heldout3_sources_appear_nowhere_else() -> None:
    """The third sealed set is held out from everything: no origin (repository or URL) of a heldout3 row
    appears in a file under knowledge/, in external_validation.csv, or in the first or second set."""
    seen = _text_of(
        [p for p in (ROOT / "knowledge").rglob("*") if p.suffix in {".csv", ".toml", ".json", ".md"}]
        + [ROOT / "benchmarks" / "external_validation.csv", TRAINING, SERVING, TRAINING2, SERVING2]
    )
    rows = _rows(TRAINING3) + _rows(SERVING3)
    held = {_origin(r["source"]) for r in rows}
    assert len(held) >= 8, f"only {len(held)} distinct origins in the third set"
    assert all("@" in r["source"] or "://" in r["source"] for r in rows), "a source without a commit or URL"
    leaked = sorted(s for s in held if s in seen)
    assert not leaked, f"heldout3 origins also used elsewhere: {leaked}"


def test_heldout3_source_ids_are_new() -> None:
    earlier = {r["source_id"] for r in _rows(TRAINING) + _rows(SERVING) + _rows(TRAINING2) + _rows(SERVING2)}
    third = {r["source_id"] for r in _rows(TRAINING3) + _rows(SERVING3)}
    assert not earlier & third, f"source ids shared with an earlier set: {sorted(earlier & third)}"


def _cited(origin: str, text: str) -> bool:
    """Whether a source origin is cited in the text: a URL anywhere, a repository as a whole name (so that
    QwenLM/Qwen is not matched inside QwenLM/Qwen2.5)."""
    if "://" in origin:
        return origin in text
    return re.search(re.escape(origin) + r"(?![A-Za-z0-9._-])", text) is not None


def test_cited_matches_whole_repository_names_only() -> None:
    text = "QwenLM/Qwen2.5@a912d23:docs/x.md and https://example.org/a/b"
    assert not _cited("QwenLM/Qwen", text)
    assert _cited("QwenLM/Qwen2.5", text)
    assert _cited("QwenLM/Qwen", "QwenLM/Qwen@2df8e8a:README.md")
    assert _cited("https://example.org/a/b", text)


def _assert_sealed(rows: list[dict[str, str]], earlier: list[Path], min_origins: int, label: str) -> None:
    """No origin (repository or URL) of a sealed set's rows is cited by a file under knowledge/, by
    external_validation.csv or by the earlier sets; each row names a commit or URL and what it assumed."""
    seen = _text_of(
        [p for p in (ROOT / "knowledge").rglob("*") if p.suffix in {".csv", ".toml", ".json", ".md"}]
        + [ROOT / "benchmarks" / "external_validation.csv", *earlier]
    )
    held = {_origin(r["source"]) for r in rows}
    assert len(held) >= min_origins, f"only {len(held)} distinct origins in {label}"
    assert all("@" in r["source"] or "://" in r["source"] for r in rows), "a source without a commit or URL"
    assert all(r["assumed"] for r in rows), "a row that states no assumption"
    leaked = sorted(s for s in held if _cited(s, seen))
    assert not leaked, f"{label} origins also used elsewhere: {leaked}"


def batch_one_tpot(rows: list[dict[str, str]], gpus: set[str]) -> list[dict[str, str]]:
    """A serving set's rows that measure TPOT with one request in flight (static batch 1 or concurrency 1) on
    the given GPUs."""
    return [r for r in rows if "1" in (r["batch"], r["concurrency"]) and r["tpot_ms"] and r["gpu"] in gpus]


def sweeps(rows: list[dict[str, str]], loop: str, varying: str, ttft: bool = False) -> list[set[str]]:
    """The values of `varying` each deployment (source, engine, model, GPU, count, lengths) of one loop ran
    at (only rows with a TTFT when `ttft`): a sealed serving set's load curves."""
    keys: dict[tuple[str, ...], set[str]] = {}
    for r in rows:
        if r["loop"] == loop and (r["ttft_ms"] or not ttft):
            key = (r["source_id"], r["engine"], r["model"], r["gpu"], r["count"], r["isl"], r["osl"])
            keys.setdefault(key, set()).add(r[varying])
    return list(keys.values())


def test_heldout4_sources_appear_nowhere_else() -> None:
    """The fourth sealed set is held out from everything. The lead reruns this on the merged tree, where it
    catches a branch that put a heldout4 source into knowledge/."""
    earlier = [TRAINING, SERVING, TRAINING2, SERVING2, TRAINING3, SERVING3]
    _assert_sealed(_rows(TRAINING4) + _rows(SERVING4), earlier, 10, "heldout4")


def test_heldout4_source_ids_are_new_and_broad() -> None:
    earlier = {
        r["source_id"]
        for path in (TRAINING, SERVING, TRAINING2, SERVING2, TRAINING3, SERVING3)
        for r in _rows(path)
    }
    training, serving = _rows(TRAINING4), _rows(SERVING4)
    fourth = {r["source_id"] for r in training + serving}
    assert not earlier & fourth, f"source ids shared with an earlier set: {sorted(earlier & fourth)}"
    assert len({r["source_id"] for r in training}) >= 6 and 30 <= len(training) <= 60
    assert len({r["family"] for r in training}) >= 3, "training rows from fewer than three families"
    assert len({r["gpu"] for r in training + serving}) >= 6, "fewer than six GPU types"


def test_heldout5_sources_appear_nowhere_else() -> None:
    """The fifth sealed set is held out from everything, the fourth set included (rerun by the lead on the
    merged tree)."""
    earlier = [TRAINING, SERVING, TRAINING2, SERVING2, TRAINING3, SERVING3, TRAINING4, SERVING4]
    _assert_sealed(_rows(TRAINING5) + _rows(SERVING5), earlier, 4, "heldout5")


def test_heldout5_source_ids_are_new_and_spread() -> None:
    earlier = {
        r["source_id"]
        for path in (TRAINING, SERVING, TRAINING2, SERVING2, TRAINING3, SERVING3, TRAINING4, SERVING4)
        for r in _rows(path)
    }
    training, serving = _rows(TRAINING5), _rows(SERVING5)
    fifth = {r["source_id"] for r in training + serving}
    assert not earlier & fifth, f"source ids shared with an earlier set: {sorted(earlier & fifth)}"
    assert len(training) >= 30 and len(serving) >= 40, "fewer than 30 training or 40 serving runs"
    assert len({r["gpu"] for r in training + serving}) >= 12, "fewer than twelve GPU types"
    assert {int(r["count"]) for r in training} >= {8, 32, 512}, "no single-node, 32-GPU or 512-GPU run"
    batch_one_tpot = [r for r in serving if "1" in (r["batch"], r["concurrency"]) and r["tpot_ms"]]
    assert len(batch_one_tpot) >= 15, "fewer than fifteen TPOT rows at one request"


def test_heldout5_is_not_one_family() -> None:
    """The widening (heldout5b): training beyond tuned MLPerf submissions and serving TTFT under a stated
    load, each from more than one origin, so the set can judge more than one kind of published run."""
    training, serving = _rows(TRAINING5), _rows(SERVING5)
    other = [r for r in training if r["family"] != "mlperf"]
    assert len(other) >= 15, f"only {len(other)} non-MLPerf training runs"
    assert len({_origin(r["source"]) for r in other}) >= 3, "non-MLPerf training from fewer than 3 origins"
    assert len({r["family"] for r in training}) >= 3, "training rows from fewer than three families"
    loaded = [r for r in serving if r["ttft_ms"] and (r["request_rate"] or r["concurrency"] not in ("", "1"))]
    assert len(loaded) >= 10, f"only {len(loaded)} TTFT rows at a stated concurrency or request rate"
    assert len({_origin(r["source"]) for r in loaded}) >= 2, "TTFT under load from fewer than 2 origins"


SETS_1_TO_5 = [
    *(TRAINING, SERVING, TRAINING2, SERVING2, TRAINING3, SERVING3, TRAINING4, SERVING4, TRAINING5, SERVING5),
]


def test_heldout6_sources_appear_nowhere_else() -> None:
    """The sixth sealed set is held out from everything, sets 1-5 included (rerun by the lead on the merged
    tree, where it catches a branch that put a heldout6 source into knowledge/)."""
    _assert_sealed(_rows(TRAINING6) + _rows(SERVING6), SETS_1_TO_5, 9, "heldout6")


def test_heldout6_source_ids_are_new_and_spread() -> None:
    earlier = {r["source_id"] for path in SETS_1_TO_5 for r in _rows(path)}
    training, serving = _rows(TRAINING6), _rows(SERVING6)
    sixth = {r["source_id"] for r in training + serving}
    assert not earlier & sixth, f"source ids shared with an earlier set: {sorted(earlier & sixth)}"
    assert len({r["source_id"] for r in training}) >= 5, "fewer than five training sources in heldout6"
    assert len({r["source_id"] for r in serving}) >= 3, "fewer than three serving sources in heldout6"
    assert len({r["gpu"] for r in training + serving}) >= 7, "fewer than seven GPU types in heldout6"


def test_heldout6_is_not_mlperf_and_has_loaded_ttft() -> None:
    """The sixth set is non-MLPerf first, with serving TTFT under a stated load and TPOT at one request."""
    training, serving = _rows(TRAINING6), _rows(SERVING6)
    assert training and all(r["family"] != "mlperf" for r in training), "an MLPerf row in the sixth set"
    loaded = [r for r in serving if r["ttft_ms"] and (r["request_rate"] or r["concurrency"] not in ("", "1"))]
    assert loaded, "no TTFT row at a stated concurrency or request rate"
    batch_one = [r for r in serving if "1" in (r["batch"], r["concurrency"]) and r["tpot_ms"]]
    assert batch_one, "no TPOT at one request"


SETS_1_TO_6 = [*SETS_1_TO_5, TRAINING6, SERVING6]


def test_heldout7_sources_appear_nowhere_else() -> None:
    """The seventh sealed set is held out from everything, sets 1-6 included (rerun by the lead on the merged
    tree, where it catches a branch that put a heldout7 source into knowledge/)."""
    _assert_sealed(_rows(TRAINING7) + _rows(SERVING7), SETS_1_TO_6, 9, "heldout7")


def test_heldout7_source_ids_are_new_and_spread() -> None:
    earlier = {r["source_id"] for path in SETS_1_TO_6 for r in _rows(path)}
    training, serving = _rows(TRAINING7), _rows(SERVING7)
    seventh = {r["source_id"] for r in training + serving}
    assert not earlier & seventh, f"source ids shared with an earlier set: {sorted(earlier & seventh)}"
    assert len({r["source_id"] for r in training}) >= 2, "fewer than two training sources in heldout7"
    assert len({r["source_id"] for r in serving}) >= 2, "fewer than two serving sources in heldout7"
    assert len({r["gpu"] for r in training + serving}) >= 7, "fewer than seven GPU types in heldout7"


def test_heldout7_training_is_wide_enough_to_judge() -> None:
    """The widening (heldout7b): training from at least five sources in three families, runs at 64 GPUs and
    more, and GPU kinds beyond the first pass's A100/consumer cards (MI250X)."""
    training = _rows(TRAINING7)
    assert 40 <= len(training) <= 80, f"{len(training)} training runs in heldout7"
    assert len({r["source_id"] for r in training}) >= 6, "fewer than six training sources in heldout7"
    families = {r["family"] for r in training}
    assert len(families) >= 3 and "vendor-docs" in families, f"training families: {sorted(families)}"
    assert max(int(r["count"]) for r in training) >= 256, "no training run at 256 GPUs or more"
    assert sum(int(r["count"]) >= 64 for r in training) >= 10, "fewer than ten runs at 64 GPUs or more"
    assert "mi250x" in {r["gpu"] for r in training}, "no AMD training row in heldout7"


def test_heldout7_is_not_mlperf_and_has_loaded_ttft() -> None:
    """The seventh set leans on papers and independent teams: no MLPerf row, serving TTFT under a stated load
    and TPOT at one request."""
    training, serving = _rows(TRAINING7), _rows(SERVING7)
    rows = training + serving
    assert training and all(r["family"] != "mlperf" for r in rows), "an MLPerf row in the seventh set"
    assert "paper" in {r["family"] for r in training + serving}, "no paper's table in the seventh set"
    loaded = [r for r in serving if r["ttft_ms"] and (r["request_rate"] or r["concurrency"] not in ("", "1"))]
    assert loaded, "no TTFT row at a stated concurrency or request rate"
    batch_one = [r for r in serving if "1" in (r["batch"], r["concurrency"]) and r["tpot_ms"]]
    assert batch_one, "no TPOT at one request"


SETS_1_TO_7 = [*SETS_1_TO_6, TRAINING7, SERVING7]


def test_heldout8_sources_appear_nowhere_else() -> None:
    """The eighth sealed set is held out from everything, sets 1-7 included (rerun by the lead on the merged
    tree, where it catches a branch that put a heldout8 source into knowledge/)."""
    _assert_sealed(_rows(TRAINING8) + _rows(SERVING8), SETS_1_TO_7, 11, "heldout8")


def test_heldout8_source_ids_are_new() -> None:
    earlier = {r["source_id"] for path in SETS_1_TO_7 for r in _rows(path)}
    training, serving = _rows(TRAINING8), _rows(SERVING8)
    eighth = {r["source_id"] for r in training + serving}
    assert not earlier & eighth, f"source ids shared with an earlier set: {sorted(earlier & eighth)}"
    assert training and serving, "an empty half in heldout8"
    assert all(r["family"] != "mlperf" for r in training + serving), "an MLPerf row in the eighth set"


def test_heldout8_is_wide_enough_to_judge() -> None:
    """The widenings (heldout8b, heldout8c, heldout8d): training from six sources in four families, with
    independent teams' runs at 64 H100 and H200/H100 rows beside the A100, MI300X/MI325X and V100 ones;
    serving from six sources (five origins) with TTFT under a stated request rate or concurrency on four GPU
    kinds."""
    training, serving = _rows(TRAINING8), _rows(SERVING8)
    assert 40 <= len(training) <= 80, f"{len(training)} training runs in heldout8"
    assert len({r["source_id"] for r in training}) >= 6, "fewer than six training sources in heldout8"
    assert len({r["family"] for r in training}) >= 4, "training rows from fewer than four families"
    assert sum(int(r["count"]) >= 64 for r in training) >= 10, "fewer than ten runs at 64 GPUs or more"
    gpus = {r["gpu"] for r in training}
    assert {"h100-sxm", "h200", "mi300x"} <= gpus, "no H100, H200 or MI300X training row"
    toolkit = [r for r in training if r["stack"] == "axolotl" and int(r["count"]) <= 8]
    assert toolkit, "no fine-tuning toolkit run on 1-8 GPUs"
    assert len(serving) >= 50, f"{len(serving)} serving runs in heldout8"
    assert len({r["source_id"] for r in serving}) >= 6, "fewer than six serving source ids in heldout8"
    origins = {r["source"].split("@")[0] for r in serving}
    assert len(origins) >= 5, "serving rows from fewer than five origins"
    loaded = [
        r
        for r in serving
        if r["ttft_ms"] and (r["request_rate"] not in ("", "inf") or r["concurrency"] not in ("", "1"))
    ]
    assert len(loaded) >= 35, "fewer than 35 TTFT rows at a stated request rate or concurrency"
    assert len({r["gpu"] for r in loaded}) >= 4, "loaded TTFT rows on fewer than four GPU kinds"


SETS_1_TO_8 = [*SETS_1_TO_7, TRAINING8, SERVING8]


def test_heldout9_sources_appear_nowhere_else() -> None:
    """The ninth sealed set is held out from everything, sets 1-8 included (rerun by the lead on the merged
    tree, where it catches a branch that put a heldout9 source into knowledge/)."""
    _assert_sealed(_rows(TRAINING9) + _rows(SERVING9), SETS_1_TO_8, MIN_ORIGINS_9, "heldout9")


def test_heldout9_source_ids_are_new() -> None:
    earlier = {r["source_id"] for path in SETS_1_TO_8 for r in _rows(path)}
    training, serving = _rows(TRAINING9), _rows(SERVING9)
    ninth = {r["source_id"] for r in training + serving}
    assert not earlier & ninth, f"source ids shared with an earlier set: {sorted(earlier & ninth)}"
    assert training and serving, "an empty half in heldout9"
    assert all(r["family"] != "mlperf" for r in training + serving), "an MLPerf row in the ninth set"


def test_heldout9_is_wide_enough_to_judge() -> None:
    """What the ninth set was built to judge (docs/heldout.md): training from seven publishers over 1 to 2,560
    GPUs with a layout group of one source at one count, serving with TTFT under a stated concurrency."""
    training, serving = _rows(TRAINING9), _rows(SERVING9)
    assert len(training) >= MIN_TRAINING_9, f"{len(training)} training runs in heldout9"
    assert len({r["source_id"] for r in training}) >= MIN_TRAINING_SOURCES_9, "too few training sources"
    assert len({r["family"] for r in training}) >= MIN_TRAINING_FAMILIES_9, "too few training families"
    groups = [r["layout_group"] for r in training if r["layout_group"]]
    assert any(groups.count(g) >= 3 for g in set(groups)), "no layout group of three runs or more"
    assert max(int(r["count"]) for r in training) >= 256, "no run at 256 GPUs or more"
    assert min(int(r["count"]) for r in training) == 1, "no one-GPU run"
    assert len(serving) >= MIN_SERVING_9, f"{len(serving)} serving runs in heldout9"
    loaded = [r for r in serving if r["ttft_ms"] and (r["request_rate"] or r["concurrency"] not in ("", "1"))]
    assert loaded, "no TTFT at a stated request rate or concurrency"
    open_loop = [r for r in serving if r["loop"] == "open" and r["ttft_ms"]]
    assert open_loop, "no TTFT at a stated open-loop request rate"


def test_heldout9_widening_covers_papers_toolkits_and_batch_one_tpot() -> None:
    """The second pass (heldout9b): a paper's and a toolkit's rows, one source varying model size, GPU count
    and precision on datacenter and consumer GPUs, and TPOT at one request in flight on datacenter GPUs."""
    training, serving = _rows(TRAINING9), _rows(SERVING9)
    families = {r["family"] for r in training}
    assert {"paper", "toolkit-docs"} <= families, f"training families {sorted(families)}"
    toolkit = [r for r in training if r["family"] == "toolkit-docs"]
    assert {r["gpu"] for r in toolkit} >= {"h100-sxm", "rtx-4090"}, "toolkit rows on fewer GPU kinds"
    assert {int(r["count"]) for r in toolkit} >= {1, 4, 8}, "toolkit rows at fewer GPU counts"
    assert {r["precision"] for r in toolkit} >= {"bf16", "fp8"}, "toolkit rows in one precision"
    batch_one = [r for r in serving if r["tpot_ms"] and "1" in (r["concurrency"], r["batch"])]
    assert len(batch_one) >= 13, f"{len(batch_one)} TPOT rows at one request"
    assert len({r["gpu"] for r in batch_one}) >= 3, "batch-1 TPOT on fewer than three GPU kinds"


SETS_1_TO_9 = [*SETS_1_TO_8, TRAINING9, SERVING9]


def test_heldout10_training_rows_parse(catalogue: dict[str, set[str]]) -> None:
    test_training_rows_parse(catalogue, TRAINING10)


def test_heldout10_serving_rows_parse(catalogue: dict[str, set[str]]) -> None:
    """Every set's checks, then what the tenth set's serving half adds: each row names its engine and states
    its output throughput."""
    test_serving_rows_parse(catalogue, SERVING10)
    for row in _rows(SERVING10):
        assert row["engine"] in catalogue["engines"], f"row {row['id']}: engine {row['engine']!r}"
        assert row["output_tok_s"], f"row {row['id']}: no output throughput"


def test_heldout10_sources_appear_nowhere_else() -> None:
    """The tenth sealed set's training half is held out from everything, sets 1-9 included (rerun by the lead
    on the merged tree, where it catches a branch that put a heldout10 source into knowledge/)."""
    _assert_sealed(_rows(TRAINING10), SETS_1_TO_9, MIN_TRAINING_SOURCES_10, "heldout10")


def test_heldout10_source_ids_are_new() -> None:
    earlier = {r["source_id"] for path in SETS_1_TO_9 for r in _rows(path)}
    tenth = {r["source_id"] for r in _rows(TRAINING10)}
    assert not earlier & tenth, f"source ids shared with an earlier set: {sorted(earlier & tenth)}"
    assert all(r["family"] != "mlperf" for r in _rows(TRAINING10)), "an MLPerf row in the tenth set"


def test_heldout10_is_wide_enough_to_judge() -> None:
    """What the tenth set's training half was built to judge (docs/heldout.md): ten publishers in four
    families, nine GPU kinds from one to 128 GPUs, pre-training and full, LoRA and QLoRA fine-tuning, a
    layout group of one source at one count, and one source varying only the GPU count at scale."""
    training = _rows(TRAINING10)
    assert len(training) >= MIN_TRAINING_10, f"{len(training)} training runs in heldout10"
    assert len({r["source_id"] for r in training}) >= MIN_TRAINING_SOURCES_10, "too few training sources"
    assert len({r["family"] for r in training}) >= MIN_TRAINING_FAMILIES_10, "too few training families"
    assert len({r["gpu"] for r in training}) >= MIN_GPU_KINDS_10, "too few GPU kinds"
    workloads = {r["workload"] for r in training}
    assert workloads >= {"pretrain", "finetune", "lora", "qlora"}, "a workload is missing"
    groups = [r["layout_group"] for r in training if r["layout_group"]]
    assert any(groups.count(g) >= 3 for g in set(groups)), "no layout group of three runs or more"
    assert min(int(r["count"]) for r in training) == 1, "no one-GPU run"
    assert max(int(r["count"]) for r in training) >= MAX_COUNT_10, "no run at the widened scale"
    scaled = {}
    for r in training:
        if int(r["count"]) >= 32:
            scaled.setdefault((r["source_id"], r["gpu"], r["micro_batch"]), set()).add(int(r["count"]))
    assert any(len(counts) >= 3 for counts in scaled.values()), "no source varying only the count at scale"


def test_bench_rejects_an_unknown_run_set_in_one_line() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_heldout.py"), "--runs", "no-such-set"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    assert len(lines) == 1 and "no-such-set" in lines[0] and "heldout2" in lines[0], lines


SETS_1_TO_10 = [*SETS_1_TO_9, TRAINING10, SERVING10]


def test_heldout11_training_rows_parse(catalogue: dict[str, set[str]]) -> None:
    test_training_rows_parse(catalogue, TRAINING11)


def test_heldout11_sources_appear_nowhere_else() -> None:
    """The eleventh sealed set's training half is held out from everything, sets 1-10 included (rerun by the
    lead on the merged tree, where it catches a branch that put a heldout11 source into knowledge/)."""
    _assert_sealed(_rows(TRAINING11), SETS_1_TO_10, MIN_TRAINING_SOURCES_11, "heldout11")


def test_heldout11_source_ids_are_new() -> None:
    earlier = {r["source_id"] for path in SETS_1_TO_10 for r in _rows(path)}
    eleventh = {r["source_id"] for r in _rows(TRAINING11)}
    assert not earlier & eleventh, f"source ids shared with an earlier set: {sorted(earlier & eleventh)}"
    assert all(r["family"] != "mlperf" for r in _rows(TRAINING11)), "an MLPerf row in the eleventh set"


def test_heldout11_is_wide_enough_to_judge() -> None:
    """What the eleventh set's training half holds (docs/heldout.md): pre-training, LoRA and QLoRA on six
    GPU kinds from one to 2,048 GPUs, three source families, three layout groups varying only TP x PP, and
    one source varying only the model size on one GPU (six on the H100)."""
    training = _rows(TRAINING11)
    assert len(training) >= MIN_TRAINING_11, f"{len(training)} training runs in heldout11"
    assert len({r["source_id"] for r in training}) >= MIN_TRAINING_SOURCES_11, "too few training sources"
    assert len({r["gpu"] for r in training}) >= MIN_GPU_KINDS_11, "too few GPU kinds"
    assert {r["workload"] for r in training} >= {"pretrain", "lora", "qlora"}, "a workload is missing"
    assert min(int(r["count"]) for r in training) == 1, "no one-GPU run"
    assert max(int(r["count"]) for r in training) >= MAX_COUNT_11, "no run at the set's largest count"
    assert len({r["family"] for r in training}) >= MIN_TRAINING_FAMILIES_11, "too few source families"
    groups: dict[str, int] = {}
    for r in training:
        if r["layout_group"]:
            groups[r["layout_group"]] = groups.get(r["layout_group"], 0) + 1
    assert sum(n >= 3 for n in groups.values()) >= MIN_LAYOUT_GROUPS_11, "too few layout groups of 3+ runs"
    sizes: dict[tuple[str, str, str, str], set[str]] = {}
    for r in training:
        key = (r["source_id"], r["gpu"], r["workload"], r["stack"])
        sizes.setdefault(key, set()).add(r["model_shape"] or r["model"])
    assert any(len(models) >= 6 for models in sizes.values()), "no source varying only the model size"
