"""Provides load_knowledge(): reads every knowledge file of the shipped package (or another root),
validates it on a cache miss, and returns it as plain records.

Validation (pydantic, run on the record dataclasses themselves) and TOML parsing cost more than a whole `gpus`
command, so each file's validated records are cached as JSON keyed by the file's hash and the record types'
source hash; a run with a warm cache imports neither pydantic nor tomllib."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from advisor.catalog.common import Source, decode_object, encode, normalise_id, shipped_root
from advisor.catalog.gpus import Gpu
from advisor.catalog.models import ModelSpec
from advisor.question.errors import InputError, KnowledgeError
from advisor.question.records import validate as validate_records

try:
    # CPython's own BLAKE2: `hashlib` would first load OpenSSL's library, a tenth of a short command's CPU.
    from _blake2 import blake2b as _digest
except ImportError:  # an interpreter built without it
    from hashlib import blake2b as _digest

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

    # Read on use: a command that reads no assumptions, prices, checklist or rules declares none of their
    # records.
    from advisor.catalog.assumptions import Assumptions
    from advisor.catalog.checklist import ChecklistEntry
    from advisor.catalog.prices import Offer
    from advisor.catalog.rules import RuleBook

# Bump when the cached form changes in a way the record types' source does not show.
CACHE_FORMAT = b"records-3"
KEEP_VERSIONS = 4
"""Cached versions kept per knowledge file."""


def cache_dir() -> Path | None:
    """Where validated knowledge files are cached (None disables the cache)."""
    if os.environ.get("GPU_ADVISOR_NO_CACHE"):
        return None
    base = os.environ.get("GPU_ADVISOR_CACHE_DIR") or os.environ.get("XDG_CACHE_HOME")
    return Path(base) / "gpu-advisor" if base else Path.home() / ".cache" / "gpu-advisor"


@functools.lru_cache(maxsize=1)
def _schema_key() -> bytes:
    """The record types' own hash: a changed record type must not read records cached by the old one."""
    here = Path(__file__).parent
    digest = _digest(CACHE_FORMAT)
    for name in (
        "common.py",
        "assumptions.py",
        "rules.py",
        "rule_nodes.py",
        "rule_vocab.py",
        "gpus.py",
        "models.py",
        "prices.py",
        "checklist.py",
        "stacks.py",
        "benchmarks.py",
        "measured.py",
        "capacity.py",
        "storage.py",
        "hosted_prices.py",
        "tco.py",
    ):
        # An installation without sources: the file hash and CACHE_FORMAT still key it.
        with contextlib.suppress(OSError):
            digest.update((here / name).read_bytes())
    return digest.digest()


def _read_bytes(root: Traversable, name: str) -> bytes:
    try:
        return root.joinpath(name).read_bytes()
    except FileNotFoundError as exc:
        raise KnowledgeError(f"knowledge/{name}: file missing") from exc


def cached_records(
    root: Traversable,
    name: str,
    build: Callable[[Any], Any],
    parse: Callable[[bytes, str], Any] | None = None,
    also: tuple[str, ...] = (),
) -> Any:
    """The validated records of one knowledge file: from the cache, or parsed (TOML unless `parse` is
    given), built by `build` and cached. `also` names the files `build` checks this one against: their
    bytes key the entry too, so the check made when it was built holds while they are unchanged."""
    raw = _read_bytes(root, name)
    key = _schema_key() + raw + b"".join(_digest(_read_bytes(root, other)).digest() for other in also)
    folder = cache_dir()
    stem = f"{name}.records."
    cached = folder / f"{stem}{_digest(key).hexdigest()[:24]}.json" if folder else None
    records = _read_cache(cached)
    if records is _MISSING:
        records = build((parse or parse_toml)(raw, name))
        if cached is not None:
            _write_cache(cached, records, stem)
    return records


def cached_part(root: Traversable, name: str, part: str, salt: bytes, build: Callable[[], Any]) -> Any:
    """What `build` derives from one part of a large knowledge file (a GPU's rows of a measured-operation
    table), cached like cached_records() but keyed by the file's digest (worked out once per process, for
    every part), `part` and `salt` (the source of the code that derives it); None without a cache folder,
    where the caller derives what it needs on use."""
    folder = cache_dir()
    if folder is None:
        return None
    stem = f"{name.replace('/', '_')}.{part or 'all'}."
    code = _salt_digest(salt)
    key = _digest(_file_digest(root, name) + _schema_key() + code + part.encode()).hexdigest()[:24]
    cached = folder / f"{stem}{key}.json"
    records = _read_cache(cached)
    if records is _MISSING:
        records = build()
        _write_cache(cached, records, stem)
    return records


def _file_digest(root: Traversable, name: str) -> bytes:
    """A knowledge file's digest, read once per process (a command asks it for each part it reads)."""
    key = (str(root), name)
    if key not in _DIGESTS:
        _DIGESTS[key] = _digest(_read_bytes(root, name)).digest()
    return _DIGESTS[key]


_DIGESTS: dict[tuple[str, str], bytes] = {}


def _salt_digest(salt: bytes) -> bytes:
    """A salt's digest, worked out once per process: the salt (the source of the code deriving a table's
    parts, tens of kB) keys every part a command reads."""
    if salt not in _SALTS:
        _SALTS[salt] = _digest(salt).digest()
    return _SALTS[salt]


_SALTS: dict[bytes, bytes] = {}


_MISSING = object()


def _read_cache(cached: Path | None) -> Any:
    """A cache entry's records, or _MISSING."""
    if cached is None:
        return _MISSING
    try:
        records = json.loads(cached.read_bytes(), object_hook=decode_object)
    except (OSError, ValueError, KeyError, TypeError):
        return _MISSING  # absent, or written by another version: rebuild it
    with contextlib.suppress(OSError):
        os.utime(cached)  # most recently used: the last to be pruned
    return records


def parse_toml(raw: bytes, name: str) -> dict[str, Any]:
    """Parse a knowledge file (only on a cache miss: the parser's import is not free)."""
    import tomllib

    try:
        return tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise KnowledgeError(f"knowledge/{name}: not valid TOML: {exc}") from exc


def _write_cache(path: Path, records: Any, stem: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(encode(records)), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        return  # a read-only home only costs speed
    # Older entries of this file (an edited file, another installed version) are pruned, keeping the few most
    # recently used: two versions used in turn must not rebuild each other's entry every run.
    # `name.<hash>.json` is the older raw-parse form, never read again.
    legacy = re.compile(re.escape(stem.removesuffix("records.")) + r"[0-9a-f]{20}\.json")
    entries = []
    for other in path.parent.iterdir():
        if legacy.fullmatch(other.name):
            with contextlib.suppress(OSError):
                other.unlink()
        elif other != path and other.name.startswith(stem) and other.suffix == ".json":
            with contextlib.suppress(OSError):
                entries.append((other.stat().st_mtime, other))
    for _, stale in sorted(entries, reverse=True)[KEEP_VERSIONS - 1 :]:
        with contextlib.suppress(OSError):
            stale.unlink()


def _where(loc: tuple[Any, ...], data: Any, table: str) -> str:
    """Render a pydantic error location as table[index] (id 'x').field, naming the row's id where it has
    one."""
    parts: list[str] = []
    node = data
    for item in loc:
        if isinstance(item, int):
            row_id = (
                node[item].get("id")
                if isinstance(node, list) and item < len(node) and isinstance(node[item], dict)
                else None
            )
            head = parts.pop() if parts else table
            parts.append(f"{head}[{item}]" + (f" (id {row_id!r})" if row_id else ""))
        else:
            parts.append(str(item))
        try:
            node = node[item]
        except (KeyError, IndexError, TypeError):
            node = None
    return ".".join(parts)


def validate(kind: Any, data: Any, name: str, table: str = "") -> Any:
    """Validate data as a record type (or a container of them, such as list[Gpu]) and return the records; the
    first error becomes one KnowledgeError line naming the file, row and field."""
    from pydantic import ValidationError

    try:
        return validate_records(kind, data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = _where(tuple(first["loc"]), data, table)
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise KnowledgeError(f"knowledge/{name}: {where}: {first['msg']}{more}") from exc


def _read_toml(root: Traversable, name: str) -> dict[str, Any]:
    """A knowledge file's parsed contents, through the same cache (for files with no record types)."""
    return cached_records(root, name, lambda raw: raw)


def _sources(raw: dict[str, Any], name: str) -> dict[str, Source]:
    return validate(dict[str, Source], raw.get("sources", {}), name)


def _rows(raw: dict[str, Any], key: str, name: str, allowed: set[str]) -> list[dict[str, Any]]:
    extra = set(raw) - allowed
    if extra:
        raise KnowledgeError(f"knowledge/{name}: unknown top-level key(s): {', '.join(sorted(extra))}")
    rows = raw.get(key)
    if not isinstance(rows, list) or not rows:
        raise KnowledgeError(f"knowledge/{name}: needs at least one [[{key}]] table")
    return rows


def _unknown(what: str, field: str, name: str, ids: list[str], index: dict[str, Any]) -> InputError:
    """An unknown id, said without a front end's words (field and value let each name the input its own
    way): the nearest ids by spelling (ids and aliases), else every id."""
    from advisor.question.fields import near

    key = normalise_id(name)
    close = list(dict.fromkeys(index[k].id for k in near(key, index)))  # an alias counts as its id
    if close:
        accepted = "did you mean " + " or ".join(repr(c) for c in close) + "?"
    else:
        accepted = "accepted: " + ", ".join(ids)
    if what == "model":
        accepted += " (or a custom size or shape instead of a catalogue model)"
    return InputError(
        f"unknown {what} {name!r}; {accepted}",
        field=field,
        value=name,
        problem=f"is not a catalogue {what}",
        accepted=accepted,
    )


class Knowledge:
    """The validated knowledge base with id/alias lookups. Each file is read (from the cache) and checked
    against the files it refers to when first used: `predict` reads no prices nor checklist.
    `load_knowledge_from` reads and cross-checks every file at once."""

    def __init__(self, root: Traversable | Path) -> None:
        self.root = root
        # all_offers by GPU, with the refreshed prices it was built from (see offers_of).
        self._by_gpu: tuple[object, dict[str, list[Offer]]] | None = None

    # --- the files, each read on first use, each checked against those it refers to ---------------------
    @functools.cached_property
    def assumptions(self) -> Assumptions:
        return cast("Assumptions", cached_records(self.root, "assumptions.toml", _assumptions))

    @functools.cached_property
    def _gpu_file(self) -> dict[str, Any]:
        # Each GPU's fabric is checked against assumptions.toml when the entry is built, not on every read:
        # the catalogue commands then read no assumptions.
        return cast(
            dict[str, Any], cached_records(self.root, "gpus.toml", self._gpus, also=("assumptions.toml",))
        )

    def _gpus(self, raw: dict[str, Any]) -> dict[str, Any]:
        gpu_file = _gpus(raw)
        for g in gpu_file["gpus"]:
            if g.fabric not in self.assumptions.fabric:
                raise KnowledgeError(
                    f"knowledge/gpus.toml: {g.id}: fabric {g.fabric!r} is not one of "
                    f"{', '.join(self.assumptions.fabric)} (assumptions.toml)"
                )
        return gpu_file

    @functools.cached_property
    def _model_file(self) -> dict[str, Any]:
        return cast(dict[str, Any], cached_records(self.root, "models.toml", _models))

    @functools.cached_property
    def _offer_file(self) -> dict[str, Any]:
        offer_file = cached_records(self.root, "prices.toml", _offers)
        gpu_ids = {g.id for g in self.gpus}
        for i, o in enumerate(offer_file["offers"]):
            if o.gpu not in gpu_ids:
                raise KnowledgeError(
                    f"knowledge/prices.toml: offer[{i}] ({o.provider} {o.instance}): unknown gpu {o.gpu!r}"
                )
        return cast(dict[str, Any], offer_file)

    @functools.cached_property
    def _checklist_file(self) -> dict[str, Any]:
        return cast(dict[str, Any], cached_records(self.root, "checklist.toml", _checklist))

    @functools.cached_property
    def _rule_file(self) -> dict[str, Any]:
        return cast(dict[str, Any], cached_records(self.root, "rules.toml", _rules))

    @property
    def gpus(self) -> tuple[Gpu, ...]:
        return cast(tuple[Gpu, ...], self._gpu_file["gpus"])

    @property
    def catalogue_version(self) -> str:
        return cast(str, self._gpu_file["catalogue_version"])

    @property
    def models(self) -> tuple[ModelSpec, ...]:
        return cast(tuple[ModelSpec, ...], self._model_file["models"])

    @property
    def offers(self) -> tuple[Offer, ...]:
        return cast("tuple[Offer, ...]", self._offer_file["offers"])

    @property
    def checklist(self) -> tuple[ChecklistEntry, ...]:
        return cast("tuple[ChecklistEntry, ...]", self._checklist_file["entries"])

    @property
    def rules(self) -> RuleBook:
        return cast("RuleBook", self._rule_file["rules"])

    def _source_tables(self) -> Iterator[tuple[str, Callable[[], dict[str, Source]]]]:
        """Each file's sources, in the order a key is looked up (the first file naming it wins)."""
        yield "assumptions.toml", lambda: self.assumptions.sources
        yield "gpus.toml", lambda: self._gpu_file["sources"]
        yield "models.toml", lambda: self._model_file["sources"]
        yield "prices.toml", lambda: self._offer_file["sources"]
        yield "checklist.toml", lambda: self._checklist_file["sources"]
        yield "rules.toml", lambda: self._rule_file["sources"]

    @functools.cached_property
    def sources(self) -> dict[str, Source]:
        """Every file's sources by key (reads every file); a key names one document in every file."""
        sources: dict[str, Source] = {}
        for name, table in self._source_tables():
            for key, src in table().items():
                if key in sources and sources[key].title != src.title:
                    raise KnowledgeError(
                        f"knowledge/{name}: source key {key!r} names a different document than in "
                        f"another file ({sources[key].title!r}); use a distinct key"
                    )
                sources.setdefault(key, src)
        return sources

    @functools.cached_property
    def _gpu_index(self) -> dict[str, Gpu]:
        return _index(self.gpus, "GPU", "gpus.toml")

    @functools.cached_property
    def _model_index(self) -> dict[str, ModelSpec]:
        return _index(self.models, "model", "models.toml")

    def check_all(self) -> Knowledge:
        """Read and cross-check every file now (a user's catalogue, a test): errors at load, not at use."""
        for name in ("sources", "rules", "checklist", "offers", "_gpu_index", "_model_index"):
            getattr(self, name)
        return self

    # --- lookups ------------------------------------------------------------------------------------------
    def gpu(self, name: str) -> Gpu:
        """Resolve a GPU id or alias (case-insensitive); InputError names the accepted ids."""
        # An id as the catalogue spells it (what the operation tables ask thousands of times) is found as is.
        found = self._gpu_index.get(name) or self._gpu_index.get(normalise_id(name))
        if found is None:
            raise _unknown("GPU", "gpu", name, [g.id for g in self.gpus], self._gpu_index)
        return found

    def model(self, name: str) -> ModelSpec:
        """Resolve a model id or alias (case-insensitive); InputError names the accepted ids."""
        found = self._model_index.get(normalise_id(name))
        if found is None:
            raise _unknown("model", "model", name, [m.id for m in self.models], self._model_index)
        return found

    def source(self, key: str) -> Source | None:
        """A source by key, from any knowledge file (read only up to the first that names it)."""
        for _, table in self._source_tables():
            found = table().get(key)
            if found is not None:
                return found
        return None


def _index(items: tuple[Any, ...], what: str, name: str) -> dict[str, Any]:
    index: dict[str, Any] = {}
    for item in items:
        for key in (item.id, *item.aliases):
            norm = normalise_id(key)
            if norm in index and index[norm] is not item:
                raise KnowledgeError(
                    f"knowledge/{name}: {what} alias {key!r} of {item.id!r} collides with {index[norm].id!r}"
                )
            index[norm] = item
    return index


def _check_refs(name: str, used: dict[str, set[str]], known: set[str]) -> None:
    for row_id, keys in used.items():
        unknown = keys - known
        if unknown:
            raise KnowledgeError(
                f"knowledge/{name}: {row_id}: unknown source key(s) {', '.join(sorted(unknown))}"
            )


def _assumptions(raw: dict[str, Any]) -> Assumptions:

    from advisor.catalog.assumptions import Assumptions

    assumptions: Assumptions = validate(Assumptions, raw, "assumptions.toml")
    _check_refs("assumptions.toml", {"figures": assumptions.cited_sources()}, set(assumptions.sources))
    return assumptions


def _gpus(raw: dict[str, Any]) -> dict[str, Any]:

    rows = _rows(raw, "gpu", "gpus.toml", {"schema_version", "catalogue_version", "sources", "gpu"})
    sources = _sources(raw, "gpus.toml")
    gpus = tuple(validate(list[Gpu], rows, "gpus.toml", "gpu"))
    _check_refs(
        "gpus.toml",
        {g.id: set(g.field_sources.values()) | ({g.price.source} if g.price else set()) for g in gpus},
        set(sources),
    )
    return {
        "catalogue_version": str(raw.get("catalogue_version", "unversioned")),
        "sources": sources,
        "gpus": gpus,
    }


def _models(raw: dict[str, Any]) -> dict[str, Any]:

    rows = _rows(raw, "model", "models.toml", {"schema_version", "sources", "model"})
    sources = _sources(raw, "models.toml")
    models = tuple(validate(list[ModelSpec], rows, "models.toml", "model"))
    _check_refs(
        "models.toml",
        {m.id: ({m.source} | set(m.field_sources.values())) - {"derived"} for m in models},
        set(sources),
    )
    return {"sources": sources, "models": models}


def _offers(raw: dict[str, Any]) -> dict[str, Any]:

    rows = _rows(raw, "offer", "prices.toml", {"schema_version", "sources", "offer"})
    sources = _sources(raw, "prices.toml")
    from advisor.catalog.prices import Offer

    offers = tuple(validate(list[Offer], rows, "prices.toml", "offer"))
    _check_refs(
        "prices.toml",
        {f"offer[{i}] ({o.provider} {o.instance})": {o.source} for i, o in enumerate(offers)},
        set(sources),
    )
    return {"sources": sources, "offers": offers}


def _checklist(raw: dict[str, Any]) -> dict[str, Any]:

    rows = _rows(raw, "entry", "checklist.toml", {"schema_version", "sources", "entry"})
    sources = _sources(raw, "checklist.toml")
    from advisor.catalog.checklist import MEMORY_COMPONENTS, ChecklistEntry

    entries = tuple(validate(list[ChecklistEntry], rows, "checklist.toml", "entry"))
    _check_refs(
        "checklist.toml",
        {e.id: set(e.sources) | {t.source for t in e.thresholds} for e in entries},
        set(sources),
    )
    for e in entries:
        unknown = set(e.remedies) - set(MEMORY_COMPONENTS)
        if unknown:
            raise KnowledgeError(
                f"knowledge/checklist.toml: {e.id}: unknown memory component(s) in remedies: "
                f"{', '.join(sorted(unknown))}; known: {', '.join(MEMORY_COMPONENTS)}"
            )
    return {"sources": sources, "entries": entries}


def _rules(raw: dict[str, Any]) -> dict[str, Any]:

    from advisor.catalog.rules import RuleBook

    rules: RuleBook = validate(RuleBook, raw, "rules.toml")
    sources = validate(dict[str, Source], rules.sources, "rules.toml")
    _check_refs("rules.toml", {r.id: {r.source} for r in rules.rule}, set(sources))
    return {"rules": rules, "sources": sources}


def load_knowledge_from(root: Traversable | Path) -> Knowledge:
    """Load and cross-check every knowledge file below `root` (a package resource or a plain folder)."""
    return Knowledge(root).check_all()


@functools.lru_cache(maxsize=1)
def load_knowledge() -> Knowledge:
    """The knowledge shipped with the package (cached: it is read once per process), each file read when
    first used: the shipped files are cross-checked whole by the test suite, and an error in one is still
    a KnowledgeError (exit 3) when it is read."""
    return Knowledge(shipped_root())


def all_offers(knowledge: Knowledge) -> list[Offer]:
    """Refreshed offers (GPUs the catalogue knows) followed by the shipped snapshot."""
    from advisor.catalog.prices import load_user_prices

    user = load_user_prices()
    known = {g.id for g in knowledge.gpus}
    fresh = [o for o in user.offers if o.gpu in known] if user else []
    return fresh + list(knowledge.offers)


def offers_of(knowledge: Knowledge, gpu_id: str) -> list[Offer]:
    """all_offers(knowledge) of one GPU, in the same order: grouped once per version of the refreshed prices
    (a search screens every GPU's offers, each a scan of all of them otherwise)."""
    from advisor.catalog.prices import load_user_prices

    user = load_user_prices()  # the same object while the file is unchanged
    if knowledge._by_gpu is None or knowledge._by_gpu[0] is not user:
        index: dict[str, list[Offer]] = {}
        for o in all_offers(knowledge):
            index.setdefault(o.gpu, []).append(o)
        knowledge._by_gpu = (user, index)
    return list(knowledge._by_gpu[1].get(gpu_id, ()))
