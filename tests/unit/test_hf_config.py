"""Unit tests of reading Hugging Face config.json files and quick shapes into model specs with parameter
counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.catalog.hf_config import read_hf_config, spec_from_hf_config, spec_from_shape
from advisor.question.errors import InputError

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "hf_configs"


def _read(name: str):
    return read_hf_config(FIXTURES / f"{name}.json")


def test_llama_31_8b_matches_the_catalogue(knowledge) -> None:
    spec = _read("llama-3.1-8b")
    catalogue = knowledge.model("llama-3.1-8b")
    assert spec.params == pytest.approx(catalogue.params, rel=0.01)
    assert spec.params == 8_030_261_248  # the catalogue's own derivation, to the parameter
    assert (spec.layers, spec.hidden, spec.heads, spec.kv_heads, spec.ffn_hidden, spec.vocab) == (
        catalogue.layers,
        catalogue.hidden,
        catalogue.heads,
        catalogue.kv_heads,
        catalogue.ffn_hidden,
        catalogue.vocab,
    )
    assert spec.gated_ffn and not spec.tied_embeddings and spec.kv_channels is None
    assert spec.max_seq_len == 131072 and spec.architecture == "llama" and spec.id == "llama-3.1-8b"


@pytest.mark.parametrize(
    "name,total,active,rel",
    [
        ("mixtral-8x7b", 46.7e9, 12.9e9, 0.005),  # Mixtral paper: 47B / 13B; catalogue 46.70B / 12.88B
        ("deepseek-v3", 671e9, 37e9, 0.016),  # DeepSeek-V3 report: 671B total, 37B activated
        ("qwen3-30b-a3b", 30.5e9, 3.3e9, 0.02),  # its name: 30B total, A3B active
    ],
)
def test_moe_total_and_active(name: str, total: float, active: float, rel: float) -> None:
    spec = _read(name)
    assert spec.params == pytest.approx(total, rel=rel)
    assert spec.active_params == pytest.approx(active, rel=rel)
    assert spec.experts > 1 and spec.moe_ffn_hidden is not None


def test_deepseek_v3_latent_attention_and_shared_experts() -> None:
    spec = _read("deepseek-v3")
    assert (spec.experts, spec.experts_per_token, spec.shared_experts, spec.dense_layers) == (256, 8, 1, 3)
    assert (spec.kv_lora_rank, spec.qk_rope_head_dim, spec.kv_channels) == (512, 64, 128)
    assert (spec.ffn_hidden, spec.moe_ffn_hidden) == (18432, 2048)


@pytest.mark.parametrize(
    "name,expected",
    [
        ("qwen2.5-72b", 72.7e9),  # model card 72.7B (QKV biases counted)
        ("gpt2", 124_439_808),  # GPT-2 small "124M", tied embeddings and 1024 learned positions
        ("llama-3.2-1b", 1.236e9),  # tied embeddings, head_dim 64
        ("phi-3-mini-4k", 3.82e9),  # Phi-3 report: 3.8B
        ("falcon-7b", 6.92e9),  # multi-query, parallel attention, one LayerNorm a layer
    ],
)
def test_dense_parameter_counts(name: str, expected: float) -> None:
    assert _read(name).params == pytest.approx(expected, rel=0.005)


def test_gemma_2_9b_non_embedding_matches_the_paper() -> None:
    spec = _read("gemma-2-9b")
    assert spec.tied_embeddings and spec.kv_channels == 256
    assert spec.params - spec.vocab * spec.hidden == 8_324_201_984  # Gemma 2 paper, Table 1


def test_pythia_non_embedding_matches_the_model_card() -> None:
    spec = _read("pythia-160m")
    assert not spec.gated_ffn and not spec.tied_embeddings
    assert spec.params - 2 * spec.vocab * spec.hidden == 85_056_000


def test_gemma_3_reads_the_nested_text_config() -> None:
    spec = _read("gemma-3-12b")
    assert (spec.layers, spec.hidden, spec.kv_channels, spec.architecture) == (48, 3840, 256, "gemma3_text")
    assert spec.params == pytest.approx(11.77e9, rel=0.005)  # the text decoder only


def test_a_folder_holding_config_json_is_read(tmp_path: Path) -> None:
    folder = tmp_path / "Mixtral-8x7B-v0.1"
    folder.mkdir()
    (folder / "config.json").write_text((FIXTURES / "mixtral-8x7b.json").read_text())
    assert read_hf_config(folder).id == "mixtral-8x7b-v0.1"


def test_spec_from_shape_reproduces_the_catalogue(knowledge) -> None:
    spec = spec_from_shape(32, 4096, 32, 8, 14336, 128256)
    assert spec.params == pytest.approx(knowledge.model("llama-3.1-8b").params, rel=1e-3)
    moe = spec_from_shape(32, 4096, 32, 8, 14336, 32000, experts=8, experts_per_token=2)
    assert moe.params == pytest.approx(knowledge.model("mixtral-8x7b").params, rel=1e-3)
    assert moe.active_params == pytest.approx(knowledge.model("mixtral-8x7b").active_params, rel=1e-3)


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"kv_heads": 5}, "kv_heads: 5 does not divide the 32 heads"),
        ({"heads": 0}, "heads: 0 is not accepted"),
        ({"hidden": 4100}, "heads: 32 does not divide the hidden size 4100"),
    ],
)
def test_spec_from_shape_rejects_bad_shapes(kwargs: dict[str, int], message: str) -> None:
    args = {"layers": 32, "hidden": 4096, "heads": 32, "kv_heads": 8, "ffn": 14336, "vocab": 128256} | kwargs
    with pytest.raises(InputError, match=message):
        spec_from_shape(**args)


def _one_line(exc: pytest.ExceptionInfo[InputError]) -> str:
    text = str(exc.value)
    assert "\n" not in text and "Traceback" not in text
    return text


def test_unknown_architecture_names_it_and_the_accepted() -> None:
    with pytest.raises(InputError) as exc:
        spec_from_hf_config({"model_type": "mamba", "architectures": ["MambaForCausalLM"]}, source="x.json")
    text = _one_line(exc)
    assert "unknown model_type 'mamba'" in text and "llama" in text and "deepseek_v3" in text


def test_architectures_decide_when_model_type_is_absent() -> None:
    data = json.loads((FIXTURES / "qwen2.5-72b.json").read_text())
    del data["model_type"]
    assert spec_from_hf_config(data, source="x").architecture == "qwen2"


def test_missing_key_is_one_line_naming_it() -> None:
    data = json.loads((FIXTURES / "llama-3.1-8b.json").read_text())
    del data["intermediate_size"]
    with pytest.raises(InputError) as exc:
        spec_from_hf_config(data, source="cfg.json")
    assert _one_line(exc) == "cfg.json: missing key 'intermediate_size' (model_type 'llama')"


def test_bad_value_is_one_line_naming_it() -> None:
    data = json.loads((FIXTURES / "llama-3.1-8b.json").read_text()) | {"num_hidden_layers": "32"}
    with pytest.raises(InputError, match=r"key 'num_hidden_layers' is '32'; accepted: a whole number >= 1"):
        spec_from_hf_config(data, source="cfg.json")


@pytest.mark.parametrize(
    "content,message",
    [
        ("{not json", "is not JSON"),
        ("[1, 2]", "holds one JSON object, not list"),
        ("[" * 100 + "]" * 100, "nested deeper than 16 levels"),
        ("[" * 100_000 + "]" * 100_000, "nested"),
        (b"\xff\xfe{}", "is not JSON"),
    ],
)
def test_bad_files_are_one_line(tmp_path: Path, content: str | bytes, message: str) -> None:
    path = tmp_path / "config.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(InputError, match=message) as exc:
        read_hf_config(path)
    _one_line(exc)


def test_huge_and_missing_files_are_one_line(tmp_path: Path) -> None:
    huge = tmp_path / "config.json"
    huge.write_text('{"pad": "' + "x" * (1 << 20) + '"}')
    with pytest.raises(InputError, match=r"bytes; a config\.json up to 1 MiB") as exc:
        read_hf_config(huge)
    _one_line(exc)
    with pytest.raises(InputError, match="is not a regular file") as exc:
        read_hf_config(tmp_path / "absent.json")
    _one_line(exc)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError, match="is not a regular file"):
        read_hf_config(empty)  # a folder without config.json


@pytest.mark.parametrize(
    "fixture,model_id",
    [
        ("deepseek-v3", "deepseek-v3"),
        ("qwen3-30b-a3b", "qwen3-30b-a3b"),
        ("mixtral-8x7b", "mixtral-8x7b"),
        ("gemma-2-9b", "gemma-2-9b"),
        ("qwen2.5-72b", "qwen2.5-72b"),
        ("llama-3.2-1b", "llama-3.2-1b"),
    ],
)
def test_catalogue_entries_agree_with_their_config(knowledge, fixture: str, model_id: str) -> None:
    spec, entry = _read(fixture), knowledge.model(model_id)
    assert spec.params == pytest.approx(entry.params, rel=1e-3)
    assert spec.active == pytest.approx(entry.active, rel=1e-3)
    for field in (
        "layers",
        "hidden",
        "heads",
        "kv_heads",
        "ffn_hidden",
        "vocab",
        "experts",
        "experts_per_token",
        "kv_channels",
        "moe_ffn_hidden",
        "shared_experts",
        "dense_layers",
        "kv_lora_rank",
        "qk_rope_head_dim",
        "tied_embeddings",
    ):
        if field == "moe_ffn_hidden" and entry.experts == 1:
            continue
        assert getattr(spec, field) == getattr(entry, field), (model_id, field)
