"""Provides load_knowledge(): reads every knowledge file through importlib.resources and validates it."""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
import os
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError

from advisor.catalog.assumptions import Assumptions
from advisor.catalog.checklist import MEMORY_COMPONENTS, ChecklistEntry
from advisor.catalog.common import Source, normalise_id
from advisor.catalog.gpus import Gpu
from advisor.catalog.models import ModelSpec
from advisor.catalog.prices import Offer
from advisor.errors import InputError, KnowledgeError
from advisor.rules import RuleBook

T = TypeVar("T")


def cache_dir() -> Path | None:
    """Where parsed knowledge files are cached (None disables the cache)."""
    if os.environ.get("GPU_ADVISOR_NO_CACHE"):
        return None
    base = os.environ.get("GPU_ADVISOR_CACHE_DIR") or os.environ.get("XDG_CACHE_HOME")
    return Path(base) / "gpu-advisor" if base else Path.home() / ".cache" / "gpu-advisor"


def _read_toml(root: Traversable, name: str) -> dict[str, Any]:
    """Parse a knowledge file; the parse (not the validation) is cached as JSON keyed by the file's hash,
    because the pure-Python TOML parser costs more than everything else a command does."""
    try:
        raw = root.joinpath(name).read_bytes()
    except FileNotFoundError as exc:
        raise KnowledgeError(f"knowledge/{name}: file missing") from exc
    folder = cache_dir()
    cached = folder / f"{name}.{hashlib.sha256(raw).hexdigest()[:20]}.json" if folder else None
    if cached is not None:
        try:
            return json.loads(cached.read_bytes())
        except (OSError, ValueError):
            pass
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise KnowledgeError(f"knowledge/{name}: not valid TOML: {exc}") from exc
    if cached is not None:
        _write_cache(cached, data)
    return data


def _write_cache(path: Path, data: dict[str, Any]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, default=_json_default), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only home only costs speed


def _json_default(value: Any) -> str:
    if isinstance(value, (dt.date, dt.datetime, dt.time)):
        return value.isoformat()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def _where(loc: tuple[Any, ...], data: Any, table: str) -> str:
    """Render a pydantic error location as table[index] (id 'x').field, naming the row's id where it has one."""
    parts: list[str] = []
    node = data
    for item in loc:
        if isinstance(item, int):
            row_id = node[item].get("id") if isinstance(node, list) and item < len(node) and isinstance(node[item], dict) else None
            head = parts.pop() if parts else table
            parts.append(f"{head}[{item}]" + (f" (id {row_id!r})" if row_id else ""))
        else:
            parts.append(str(item))
        try:
            node = node[item]
        except (KeyError, IndexError, TypeError):
            node = None
    return ".".join(parts)


def _validate(adapter: TypeAdapter[T] | type[BaseModel], data: Any, name: str, table: str = "") -> Any:
    try:
        if isinstance(adapter, TypeAdapter):
            return adapter.validate_python(data)
        return adapter.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = _where(tuple(first["loc"]), data, table)
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise KnowledgeError(f"knowledge/{name}: {where}: {first['msg']}{more}") from exc


_SOURCES = TypeAdapter(dict[str, Source])


def _rows(raw: dict[str, Any], key: str, name: str, allowed: set[str]) -> list[dict[str, Any]]:
    extra = set(raw) - allowed
    if extra:
        raise KnowledgeError(f"knowledge/{name}: unknown top-level key(s): {', '.join(sorted(extra))}")
    rows = raw.get(key)
    if not isinstance(rows, list) or not rows:
        raise KnowledgeError(f"knowledge/{name}: needs at least one [[{key}]] table")
    return rows


@dataclass(frozen=True, eq=False)
class Knowledge:
    """The validated knowledge base with id/alias lookups."""

    gpus: tuple[Gpu, ...]
    models: tuple[ModelSpec, ...]
    offers: tuple[Offer, ...]
    checklist: tuple[ChecklistEntry, ...]
    rules: RuleBook
    assumptions: Assumptions
    sources: dict[str, Source]
    catalogue_version: str
    root: Traversable
    _gpu_index: dict[str, Gpu] = field(repr=False, default_factory=dict)
    _model_index: dict[str, ModelSpec] = field(repr=False, default_factory=dict)

    def gpu(self, name: str) -> Gpu:
        """Resolve a GPU id or alias (case-insensitive); InputError names the accepted ids."""
        found = self._gpu_index.get(normalise_id(name))
        if found is None:
            raise InputError(f"unknown GPU {name!r}; accepted: {', '.join(g.id for g in self.gpus)}")
        return found

    def model(self, name: str) -> ModelSpec:
        """Resolve a model id or alias (case-insensitive); InputError names the accepted ids."""
        found = self._model_index.get(normalise_id(name))
        if found is None:
            raise InputError(f"unknown model {name!r}; accepted: {', '.join(m.id for m in self.models)} "
                             "(or --params N for a custom dense transformer)")
        return found

    def offers_for(self, gpu_id: str) -> list[Offer]:
        """Every cloud offer of one GPU."""
        return [o for o in self.offers if o.gpu == gpu_id]

    def source(self, key: str) -> Source | None:
        """A source by key, from any knowledge file."""
        return self.sources.get(key)


def _index(items: tuple[Any, ...], what: str, name: str) -> dict[str, Any]:
    index: dict[str, Any] = {}
    for item in items:
        for key in (item.id, *item.aliases):
            norm = normalise_id(key)
            if norm in index and index[norm] is not item:
                raise KnowledgeError(f"knowledge/{name}: {what} alias {key!r} of {item.id!r} "
                                     f"collides with {index[norm].id!r}")
            index[norm] = item
    return index


def _check_refs(name: str, used: dict[str, set[str]], known: set[str]) -> None:
    for row_id, keys in used.items():
        unknown = keys - known
        if unknown:
            raise KnowledgeError(f"knowledge/{name}: {row_id}: unknown source key(s) {', '.join(sorted(unknown))}")


def load_knowledge_from(root: Traversable | Path) -> Knowledge:
    """Load and cross-check every knowledge file below `root` (a package resource or a plain folder)."""
    assumptions = _validate(Assumptions, _read_toml(root, "assumptions.toml"), "assumptions.toml")
    _check_refs("assumptions.toml", {"figures": assumptions.cited_sources()}, set(assumptions.sources))

    raw = _read_toml(root, "gpus.toml")
    catalogue_version = str(raw.get("catalogue_version", "unversioned"))
    gpu_rows = _rows(raw, "gpu", "gpus.toml", {"schema_version", "catalogue_version", "sources", "gpu"})
    gpu_sources = _validate(_SOURCES, raw.get("sources", {}), "gpus.toml")
    gpus = tuple(_validate(TypeAdapter(list[Gpu]), gpu_rows, "gpus.toml", "gpu"))
    _check_refs("gpus.toml", {
        g.id: set(g.field_sources.values()) | ({g.price.source} if g.price else set()) for g in gpus
    }, set(gpu_sources))
    for g in gpus:
        if g.fabric not in assumptions.fabric:
            raise KnowledgeError(f"knowledge/gpus.toml: {g.id}: fabric {g.fabric!r} is not one of "
                                 f"{', '.join(assumptions.fabric)} (assumptions.toml)")

    raw = _read_toml(root, "models.toml")
    model_rows = _rows(raw, "model", "models.toml", {"schema_version", "sources", "model"})
    model_sources = _validate(_SOURCES, raw.get("sources", {}), "models.toml")
    models = tuple(_validate(TypeAdapter(list[ModelSpec]), model_rows, "models.toml", "model"))
    _check_refs("models.toml", {
        m.id: ({m.source} | set(m.field_sources.values())) - {"derived"} for m in models
    }, set(model_sources))

    raw = _read_toml(root, "prices.toml")
    offer_rows = _rows(raw, "offer", "prices.toml", {"schema_version", "sources", "offer"})
    price_sources = _validate(_SOURCES, raw.get("sources", {}), "prices.toml")
    offers = tuple(_validate(TypeAdapter(list[Offer]), offer_rows, "prices.toml", "offer"))
    gpu_ids = {g.id for g in gpus}
    for i, o in enumerate(offers):
        if o.gpu not in gpu_ids:
            raise KnowledgeError(f"knowledge/prices.toml: offer[{i}] ({o.provider} {o.instance}): unknown gpu {o.gpu!r}")
    _check_refs("prices.toml", {f"offer[{i}] ({o.provider} {o.instance})": {o.source} for i, o in enumerate(offers)},
                set(price_sources))

    raw = _read_toml(root, "checklist.toml")
    entry_rows = _rows(raw, "entry", "checklist.toml", {"schema_version", "sources", "entry"})
    checklist_sources = _validate(_SOURCES, raw.get("sources", {}), "checklist.toml")
    checklist = tuple(_validate(TypeAdapter(list[ChecklistEntry]), entry_rows, "checklist.toml", "entry"))
    _check_refs("checklist.toml", {
        e.id: set(e.sources) | {t.source for t in e.thresholds} for e in checklist
    }, set(checklist_sources))
    for e in checklist:
        unknown = set(e.remedies) - set(MEMORY_COMPONENTS)
        if unknown:
            raise KnowledgeError(f"knowledge/checklist.toml: {e.id}: unknown memory component(s) in remedies: "
                                 f"{', '.join(sorted(unknown))}; known: {', '.join(MEMORY_COMPONENTS)}")

    rules = _validate(RuleBook, _read_toml(root, "rules.toml"), "rules.toml")
    rule_sources = _validate(_SOURCES, rules.sources, "rules.toml")
    _check_refs("rules.toml", {r.id: {r.source} for r in rules.rule}, set(rule_sources))

    sources: dict[str, Source] = {}
    for name, table in (("assumptions.toml", assumptions.sources), ("gpus.toml", gpu_sources),
                        ("models.toml", model_sources), ("prices.toml", price_sources),
                        ("checklist.toml", checklist_sources), ("rules.toml", rule_sources)):
        for key, src in table.items():
            if key in sources and sources[key].title != src.title:
                raise KnowledgeError(f"knowledge/{name}: source key {key!r} names a different document than in "
                                     f"another file ({sources[key].title!r}); use a distinct key")
            sources.setdefault(key, src)
    return Knowledge(
        gpus=gpus, models=models, offers=offers, checklist=checklist, rules=rules, assumptions=assumptions,
        sources=sources, catalogue_version=catalogue_version, root=root,
        _gpu_index=_index(gpus, "GPU", "gpus.toml"), _model_index=_index(models, "model", "models.toml"),
    )


@functools.lru_cache(maxsize=1)
def load_knowledge() -> Knowledge:
    """The knowledge shipped with the package (cached: it is read once per process)."""
    return load_knowledge_from(resources.files("knowledge"))
