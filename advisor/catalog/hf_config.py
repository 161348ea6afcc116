"""Provides a model spec read from a Hugging Face config.json, or built from a quick shape, with its
parameter count."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypedDict

from advisor.catalog.models import ModelSpec
from advisor.catalog.shape_params import SHAPE_LIMITS, Latent, Moe, Shape, count_params, shape_problems
from advisor.question.errors import InputError

MAX_BYTES = 1 << 20
MAX_DEPTH = 16
_MISSING = object()


class _Dims(TypedDict):
    """The Shape fields every Llama-like decoder names the same way (typed so `Shape(**dims)` is checked)."""

    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    vocab: int


class _Config:
    """A config.json's keys, read with one-line errors that name the key and the family that needs it."""

    def __init__(self, data: Mapping[str, Any], family: str, source: str) -> None:
        self.data, self.family, self.source = data, family, source

    def _fail(self, what: str) -> InputError:
        return InputError(f"{self.source}: {what} (model_type {self.family!r})")

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def num(self, *keys: str, default: Any = _MISSING, zero: bool = False) -> Any:
        """The first of `keys` present, as a positive integer (or >= 0 with zero=True); else default."""
        for key in keys:
            value = self.data.get(key)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < (0 if zero else 1):
                least = "0" if zero else "1"
                raise self._fail(f"key {key!r} is {value!r}; accepted: a whole number >= {least}")
            return value
        if default is _MISSING:
            raise self._fail(f"missing key {' or '.join(repr(k) for k in keys)}")
        return default

    def flag(self, key: str, default: bool) -> bool:
        value = self.data.get(key, default)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self._fail(f"key {key!r} is {value!r}; accepted: true or false")
        return value

    def dims(self) -> _Dims:
        """The keys every Llama-like decoder names the same way."""
        heads = self.num("num_attention_heads")
        hidden = self.num("hidden_size")
        return {
            "layers": self.num("num_hidden_layers"),
            "hidden": hidden,
            "heads": heads,
            "kv_heads": self.num("num_key_value_heads", default=heads),
            "head_dim": self.num("head_dim", default=hidden // heads),
            "ffn": self.num("intermediate_size"),
            "vocab": self.num("vocab_size"),
        }


def _llama(c: _Config) -> Shape:
    bias = c.flag("attention_bias", False)
    return Shape(
        **c.dims(),
        qkv_bias=bias,
        out_bias=bias,
        mlp_bias=c.flag("mlp_bias", False),
        tied=c.flag("tie_word_embeddings", False),
    )


def _mixtral(c: _Config) -> Shape:
    dims = c.dims()
    moe = Moe(experts=c.num("num_local_experts"), per_token=c.num("num_experts_per_tok"), ffn=dims["ffn"])
    return Shape(**dims, tied=c.flag("tie_word_embeddings", False), moe=moe)


def _qwen2(c: _Config) -> Shape:
    return Shape(**c.dims(), qkv_bias=True, tied=c.flag("tie_word_embeddings", False))


def _qwen_dense_layers(c: _Config, layers: int) -> int:
    """Qwen-MoE layers with a dense MLP: those in mlp_only_layers or off the decoder_sparse_step grid."""
    if layers > SHAPE_LIMITS["layers"]:  # counted one by one below: bound the depth first
        raise c._fail(
            f"num_hidden_layers {layers:.3g} is out of range; accepted: at most {SHAPE_LIMITS['layers']:,}"
        )
    step = c.num("decoder_sparse_step", default=1)
    only = c.data.get("mlp_only_layers") or []
    if not isinstance(only, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in only):
        raise c._fail(f"key 'mlp_only_layers' is {only!r}; accepted: a list of layer indices")
    return sum(1 for i in range(layers) if i in only or (i + 1) % step != 0)


def _qwen2_moe(c: _Config) -> Shape:
    dims = c.dims()
    moe = Moe(
        experts=c.num("num_experts"),
        per_token=c.num("num_experts_per_tok"),
        ffn=c.num("moe_intermediate_size"),
        shared_ffn=c.num("shared_expert_intermediate_size", zero=True),
        shared_gate=True,
        dense_layers=_qwen_dense_layers(c, dims["layers"]),
    )
    return Shape(**dims, qkv_bias=True, tied=c.flag("tie_word_embeddings", False), moe=moe)


def _qwen3(c: _Config) -> Shape:
    bias = c.flag("attention_bias", False)
    return Shape(
        **c.dims(), qkv_bias=bias, out_bias=bias, qk_norm=True, tied=c.flag("tie_word_embeddings", False)
    )


def _qwen3_moe(c: _Config) -> Shape:
    dims = c.dims()
    moe = Moe(
        experts=c.num("num_experts"),
        per_token=c.num("num_experts_per_tok"),
        ffn=c.num("moe_intermediate_size"),
        dense_layers=_qwen_dense_layers(c, dims["layers"]),
    )
    bias = c.flag("attention_bias", False)
    return Shape(
        **dims, qkv_bias=bias, out_bias=bias, qk_norm=True, tied=c.flag("tie_word_embeddings", False), moe=moe
    )


def _gemma(c: _Config, qk_norm: bool) -> Shape:
    # Gemma 2/3 wrap both attention and MLP in pre- and post-norms: four norms a layer.
    return Shape(**c.dims(), norms_per_layer=4, qk_norm=qk_norm, tied=c.flag("tie_word_embeddings", True))


def _neox(c: _Config) -> Shape:
    bias = c.flag("attention_bias", True)
    return Shape(
        **c.dims(),
        gated=False,
        qkv_bias=bias,
        out_bias=bias,
        mlp_bias=True,
        norm="layer",
        tied=c.flag("tie_word_embeddings", False),
    )


def _falcon_norms(c: _Config) -> int:
    if c.flag("new_decoder_architecture", False):
        return c.num("num_ln_in_parallel_attn", default=2)
    return 1 if c.flag("parallel_attn", True) else 2


def _falcon(c: _Config) -> Shape:
    hidden, heads = c.num("hidden_size"), c.num("num_attention_heads", "n_head")
    if c.flag("new_decoder_architecture", False):
        kv_heads = c.num("num_kv_heads", "n_head_kv")
    else:
        kv_heads = 1 if c.flag("multi_query", True) else heads
    bias = c.flag("bias", False)
    return Shape(
        layers=c.num("num_hidden_layers", "n_layer"),
        hidden=hidden,
        heads=heads,
        kv_heads=kv_heads,
        head_dim=hidden // heads,
        ffn=c.num("ffn_hidden_size", default=4 * hidden),
        vocab=c.num("vocab_size"),
        gated=False,
        qkv_bias=bias,
        out_bias=bias,
        mlp_bias=bias,
        norm="layer",
        norms_per_layer=_falcon_norms(c),
        tied=c.flag("tie_word_embeddings", True),
    )


def _gpt2(c: _Config) -> Shape:
    hidden, heads = c.num("n_embd"), c.num("n_head")
    return Shape(
        layers=c.num("n_layer"),
        hidden=hidden,
        heads=heads,
        kv_heads=heads,
        head_dim=hidden // heads,
        ffn=c.num("n_inner", default=4 * hidden),
        vocab=c.num("vocab_size"),
        gated=False,
        qkv_bias=True,
        out_bias=True,
        mlp_bias=True,
        norm="layer",
        tied=c.flag("tie_word_embeddings", True),
        positions=c.num("n_positions"),
    )


def _deepseek(c: _Config) -> Shape:
    dims = c.dims()
    mla = Latent(
        q_lora_rank=c.num("q_lora_rank", default=None),
        kv_lora_rank=c.num("kv_lora_rank"),
        qk_nope_head_dim=c.num("qk_nope_head_dim"),
        qk_rope_head_dim=c.num("qk_rope_head_dim"),
        v_head_dim=c.num("v_head_dim"),
    )
    dims["head_dim"] = mla.v_head_dim
    moe = None
    if c.has("n_routed_experts"):
        width = c.num("moe_intermediate_size")
        moe = Moe(
            experts=c.num("n_routed_experts"),
            per_token=c.num("num_experts_per_tok"),
            ffn=width,
            shared_ffn=c.num("n_shared_experts", default=0, zero=True) * width,
            dense_layers=c.num("first_k_dense_replace", default=0, zero=True),
            router_bias=c.data.get("topk_method") == "noaux_tc" or c.family == "deepseek_v3",
        )
    return Shape(**dims, tied=c.flag("tie_word_embeddings", False), moe=moe, mla=mla)


_FAMILIES: dict[str, Callable[[_Config], Shape]] = {
    "llama": _llama,
    "mistral": _llama,
    "phi3": _llama,
    "mixtral": _mixtral,
    "qwen2": _qwen2,
    "qwen2_moe": _qwen2_moe,
    "qwen3": _qwen3,
    "qwen3_moe": _qwen3_moe,
    "gemma2": lambda c: _gemma(c, qk_norm=False),
    "gemma3_text": lambda c: _gemma(c, qk_norm=True),
    "gpt_neox": _neox,
    "falcon": _falcon,
    "gpt2": _gpt2,
    "deepseek_v2": _deepseek,
    "deepseek_v3": _deepseek,
}
_ALIASES = {"gemma3": "gemma3_text", "RefinedWeb": "falcon", "RefinedWebModel": "falcon"}
_ARCHITECTURES = {
    "LlamaForCausalLM": "llama",
    "MistralForCausalLM": "mistral",
    "MixtralForCausalLM": "mixtral",
    "Qwen2ForCausalLM": "qwen2",
    "Qwen2MoeForCausalLM": "qwen2_moe",
    "Qwen3ForCausalLM": "qwen3",
    "Qwen3MoeForCausalLM": "qwen3_moe",
    "Gemma2ForCausalLM": "gemma2",
    "Gemma3ForCausalLM": "gemma3_text",
    "Gemma3ForConditionalGeneration": "gemma3_text",
    "Phi3ForCausalLM": "phi3",
    "GPTNeoXForCausalLM": "gpt_neox",
    "FalconForCausalLM": "falcon",
    "RWForCausalLM": "falcon",
    "GPT2LMHeadModel": "gpt2",
    "DeepseekV2ForCausalLM": "deepseek_v2",
    "DeepseekV3ForCausalLM": "deepseek_v3",
}
ACCEPTED = ", ".join(sorted(_FAMILIES))


def _family(data: Mapping[str, Any], source: str) -> str:
    """The model_type the shape follows, from model_type or else from architectures."""
    model_type = data.get("model_type")
    if isinstance(model_type, str) and _ALIASES.get(model_type, model_type) in _FAMILIES:
        return _ALIASES.get(model_type, model_type)
    architectures = data.get("architectures")
    names = architectures if isinstance(architectures, list) else []
    for name in names:
        if name in _ARCHITECTURES:
            return _ARCHITECTURES[name]
    given = f"model_type {model_type!r}" if model_type is not None else f"architectures {architectures!r}"
    raise InputError(f"{source}: unknown {given}; accepted model_type: {ACCEPTED}")


def _text_part(data: Mapping[str, Any]) -> Mapping[str, Any]:
    """The language model's own keys: multimodal configs (Gemma 3) nest them under text_config."""
    text = data.get("text_config")
    if not isinstance(text, Mapping):
        return data
    merged = {k: v for k, v in data.items() if k != "text_config"} | dict(text)
    if "model_type" not in text:
        merged["model_type"] = data.get("model_type")
    return merged


def _model_id(data: Mapping[str, Any], family: str, fallback: str) -> str:
    name = data.get("_name_or_path")
    base = name.rstrip("/").rsplit("/", 1)[-1] if isinstance(name, str) and name.strip("/") else fallback
    slug = re.sub(r"[^a-z0-9.\-]+", "-", base.lower()).strip("-.")
    return slug if slug and slug[0].isalnum() else f"hf-{family.replace('_', '-')}"


def spec_from_hf_config(data: Mapping[str, Any], *, source: str, model_id: str | None = None) -> ModelSpec:
    """Build a ModelSpec from a parsed config.json; unknown families and missing keys are one-line
    InputErrors."""
    if not isinstance(data, Mapping):
        raise InputError(f"{source}: a config.json holds one JSON object, not {type(data).__name__}")
    data = _text_part(data)
    family = _family(data, source)
    config = _Config(data, family, source)
    shape = _FAMILIES[family](config)
    max_seq = config.num("max_position_embeddings", "n_positions", default=None)
    name = model_id or _model_id(data, family, fallback=f"hf-{family}")
    return spec_from_shape_obj(
        shape,
        model_id=name,
        name=f"{name} (from {source})",
        source=source,
        max_seq_len=max_seq,
        architecture=family,
    )


def _refuse_unsound(shape: Shape, source: str) -> None:
    """One InputError for the first architectural invariant the shape breaks (none: return)."""
    problems = shape_problems(shape)
    if not problems:
        return
    field, value, problem, accepted = problems[0]
    shown = f"{value:,}" if value < 10**12 else f"{value:.3g}"
    if source == "shape":  # a quick shape: the dimension given is the input at fault
        raise InputError(
            f"{field} {shown} {problem}; accepted: {accepted}",
            field={"per_token": "experts_per_token"}.get(field, field),
            value=shown,
            problem=problem,
            accepted=accepted,
        )
    raise InputError(  # a file: the file is the input at fault, the dimension is what is wrong in it
        f"{source}: {field} {shown} {problem}; accepted: {accepted}",
        field="config",
        value=source,
        problem=f"has {field} {shown}, which {problem}",
        accepted=f"a config.json whose {field} is {accepted}",
    )


def spec_from_shape_obj(
    shape: Shape,
    *,
    model_id: str,
    name: str,
    source: str,
    max_seq_len: int | None = None,
    architecture: str | None = None,
) -> ModelSpec:
    """A catalogue-style ModelSpec for a Shape, with its parameter count derived and said so; a shape no model
    family could have (GQA groups that do not divide the heads, absurd sizes, ...) is one InputError."""
    _refuse_unsound(shape, source)
    total, active = count_params(shape)
    moe, mla = shape.moe, shape.mla
    dense_ffn = shape.ffn if moe is None or moe.dense_layers else moe.ffn
    explicit_head = shape.head_dim != shape.hidden // shape.heads or mla is not None
    return ModelSpec(
        id=model_id,
        name=name,
        kind="llm",
        params=float(total),
        layers=shape.layers,
        hidden=shape.hidden,
        heads=shape.heads,
        kv_heads=shape.kv_heads,
        ffn_hidden=dense_ffn,
        gated_ffn=shape.gated,
        vocab=shape.vocab,
        max_seq_len=max_seq_len,
        experts=moe.experts if moe else 1,
        experts_per_token=moe.per_token if moe else 1,
        active_params=float(active),
        kv_channels=shape.head_dim if explicit_head else None,
        moe_ffn_hidden=moe.ffn if moe else None,
        shared_experts=(moe.shared_ffn + moe.ffn - 1) // moe.ffn if moe and moe.shared_ffn else 0,
        dense_layers=moe.dense_layers if moe else 0,
        kv_lora_rank=mla.kv_lora_rank if mla else None,
        qk_rope_head_dim=mla.qk_rope_head_dim if mla else 0,
        tied_embeddings=shape.tied,
        architecture=architecture,
        source=source,
        field_sources={"params": "derived", "active_params": "derived"},
        derivations={
            "params": f"counted from the shape: {total:,} total, {active:,} active per token "
            "(embeddings, attention incl. biases, FFN/experts and router, norms, "
            "lm head unless tied)"
        },
    )


def spec_from_shape(
    layers: int,
    hidden: int,
    heads: int,
    kv_heads: int,
    ffn: int,
    vocab: int,
    *,
    gated: bool = True,
    tied: bool = False,
    head_dim: int | None = None,
    experts: int = 1,
    experts_per_token: int = 1,
    max_seq_len: int | None = None,
    model_id: str = "custom-shape",
) -> ModelSpec:
    """A Llama-style decoder (RMSNorm, no biases) of the given shape: the quick --layers/--hidden/...
    model."""
    values = {
        "layers": layers,
        "hidden": hidden,
        "heads": heads,
        "kv_heads": kv_heads,
        "ffn": ffn,
        "vocab": vocab,
        "experts": experts,
        "experts_per_token": experts_per_token,
    }
    _check_shape(values, head_dim)
    moe = Moe(experts=experts, per_token=experts_per_token, ffn=ffn) if experts > 1 else None
    shape = Shape(
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim or hidden // heads,
        ffn=ffn,
        vocab=vocab,
        gated=gated,
        tied=tied,
        moe=moe,
    )
    label = f"L{layers} h{hidden} a{heads}/{kv_heads} f{ffn}{'' if gated else ' plain'} V{vocab}"
    return spec_from_shape_obj(
        shape,
        model_id=model_id,
        name=f"custom shape {label}",
        source="shape",
        max_seq_len=max_seq_len,
        architecture="llama",
    )


def _check_shape(values: dict[str, int], head_dim: int | None) -> None:
    """Raise InputError on the first shape value that is not a whole number >= 1 or does not divide."""
    for key, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputError(
                field=key, value=value, problem="is not accepted", accepted="a whole number >= 1"
            )
    heads, kv_heads, hidden = values["heads"], values["kv_heads"], values["hidden"]
    experts, experts_per_token = values["experts"], values["experts_per_token"]
    if heads % kv_heads:
        raise InputError(
            field="kv_heads",
            value=kv_heads,
            problem=f"does not divide the {heads} heads",
            accepted="a divisor",
        )
    if head_dim is None and hidden % heads:
        raise InputError(
            field="heads",
            value=heads,
            problem=f"does not divide the hidden size {hidden}",
            accepted="a divisor",
        )
    if experts_per_token > experts:
        raise InputError(
            field="experts_per_token",
            value=experts_per_token,
            problem=f"exceeds the {experts} experts",
            accepted=f"at most {experts}",
        )


def _depth(value: Any) -> int:
    """Nesting depth of parsed JSON, iteratively (a crafted file must not exhaust the stack here)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        deepest = max(deepest, level)
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        stack.extend((child, level + 1) for child in children if isinstance(child, dict | list))
    return deepest


def _bad_file(path: Path, problem: str, accepted: str = "a config.json or its folder") -> InputError:
    """A config file refused, said without a front end's words (field 'config': each names it its way)."""
    return InputError(field="config", value=str(path), problem=problem, accepted=accepted)


def _load_json(path: Path) -> Any:
    if not path.is_file():
        raise _bad_file(path, "is not a regular file")
    size = path.stat().st_size
    if size > MAX_BYTES:
        raise _bad_file(path, f"is {size:,} bytes", "a config.json up to 1 MiB")
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        # ValueError: JSONDecodeError, and an integer past Python's 4,300-digit conversion limit.
        raise _bad_file(path, f"is not JSON ({str(exc).splitlines()[0]})") from None
    except RecursionError:
        raise _bad_file(path, "is nested too deeply") from None
    if _depth(data) > MAX_DEPTH:
        raise _bad_file(path, f"is nested deeper than {MAX_DEPTH} levels")
    return data


def read_hf_config(path: Path) -> ModelSpec:
    """Read a Hugging Face config.json (or the folder holding one) into a ModelSpec; bad files are one
    line."""
    path = Path(path)
    if path.is_dir() and (path / "config.json").is_file():
        path = path / "config.json"
    try:
        data = _load_json(path)
    except OSError as exc:
        raise _bad_file(path, f"cannot be read ({exc.strerror or exc})") from None
    # A downloaded model keeps config.json in a folder named for the model; a loose file is named for it.
    fallback = (path.parent.name if path.name == "config.json" else path.stem) or "config"
    return spec_from_hf_config(
        data, source=str(path), model_id=_model_id(data if isinstance(data, dict) else {}, "config", fallback)
    )
