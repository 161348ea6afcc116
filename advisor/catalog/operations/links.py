"""Provides collective bus bandwidth by op, link, GPUs, servers and size, the link keys of catalogued GPUs and
their nominal bandwidths."""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING, Any

from advisor.catalog.operations import alphabeta
from advisor.catalog.operations.grid import (
    EXTRA_PER_DOUBLING,
    EXTRAPOLATED_SPREAD,
    FALLBACK_SPREAD,
    MAX_SPREAD,
    SCALED_SPREAD,
)
from advisor.catalog.operations.stored import stored_value
from advisor.catalog.operations.tables import (
    Measured,
    _catalogue,
    _check,
    _gpu,
    _grids,
    _measured,
    _positive,
    _rows,
    shipped_keys,
)
from advisor.question.errors import InputError

if TYPE_CHECKING:
    from advisor.catalog.gpus import Gpu

COLLECTIVE_OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv")


NVLINK_GENERATION = {"volta": 2, "ampere": 3, "hopper": 4, "blackwell": 5}
# Catalogue fabric keys (knowledge/assumptions.toml [fabric.*]) and the link keys of their measured rows.
FABRIC_LINKS = {"ib-ndr": "ib-ndr400", "ib-hdr": "ib-hdr200", "roce-200": "roce-200", "eth-100": "eth-100"}


# --- collectives --------------------------------------------------------------------------------------------
# Where an op has no rows on a link, the op whose traffic pattern is nearest (ring algorithms: a
# reduce-scatter moves what an all-gather moves; an all-reduce is both; send/recv is one ring step of an
# all-gather).
OP_PROXIES: dict[str, tuple[str, ...]] = {
    "all_reduce": ("reduce_scatter", "all_gather"),
    "all_gather": ("reduce_scatter", "all_reduce"),
    "reduce_scatter": ("all_gather", "all_reduce"),
    "all_to_all": ("all_gather", "reduce_scatter"),
    "send_recv": ("all_gather", "all_to_all"),
}


@functools.lru_cache(maxsize=1 << 14)
def collective_busbw_gbs(
    op: str, link: str, gpus: int, nodes: int, nbytes: float, profile: str | None = None
) -> Measured:
    """Achieved bus bandwidth (GB/s, as nccl-tests defines it) of one collective over `gpus` GPUs on `nodes`
    servers joined by `link` (link_key()), for a message of `nbytes` (nccl-tests' size)."""
    _check("op", op, COLLECTIVE_OPS)
    _positive(gpus=gpus, nodes=nodes, nbytes=nbytes)
    if gpus < 2:
        return Measured(math.inf, "one GPU: nothing crosses a link", "measured", 0.0)
    if nodes > 1 and _between_servers(link):
        return _network(op, link, gpus, nodes, nbytes, profile)
    for candidate in (op, *OP_PROXIES[op]):
        got = _collective_own(candidate, link, gpus, nodes, nbytes, profile)
        if got is not None:
            if candidate == op:
                return got
            return Measured(
                got.value, got.source, f"scaled from {link} {candidate}", got.spread + SCALED_SPREAD
            )
    return _collective_fallback(op, link, gpus, nodes, nbytes)


def best_busbw_gbs(op: str, link: str, gpus: int, sizes: tuple[float, ...]) -> float | None:
    """The highest collective_busbw_gbs() of a collective inside one server over the message sizes `sizes`
    (the shipped rows, the op's own), from the knowledge cache: a search's lower bound asks it for each
    tensor-parallel group, and working it out reads every size (161 lookups, ~6 ms a group). None where
    the figure reads more than the op's own rows (another op's, another link's, nominal bandwidths) or
    without a cache folder: the caller sweeps the sizes itself then."""
    if gpus < 2 or _between_servers(link) or _grids("collectives", (op, link, 1.0), None)[0] is None:
        return None
    part = f"best.{op}.{link}.{gpus}.{_sizes_tag(sizes)}"
    return stored_value(
        "collectives", part, lambda: max(collective_busbw_gbs(op, link, gpus, 1, s).value for s in sizes)
    )


@functools.lru_cache(maxsize=8)
def _sizes_tag(sizes: tuple[float, ...]) -> str:
    """A short digest of the sizes swept: an entry keeps only the sweep it was worked out over."""
    try:  # as the loader: the builtin blake2 module, not hashlib (which loads OpenSSL's library)
        from _blake2 import blake2b
    except ImportError:  # pragma: no cover - an interpreter built without it
        from hashlib import blake2b

    return blake2b(repr(sizes).encode(), digest_size=6).hexdigest()


def _collective_own(
    op: str, link: str, gpus: int, nodes: int, nbytes: float, profile: str | None
) -> Measured | None:
    """The rows of one op on one link: the asked number of servers, else the nearest measured one."""
    grid, origin = _grids("collectives", (op, link, float(nodes)), profile)
    extra = 0.0
    if grid is None:
        measured_nodes = _measured_nodes(op, link, profile)
        if not measured_nodes:
            return None
        near = min(measured_nodes, key=lambda x: (abs(math.log(x / nodes)), x))
        grid, origin = _grids("collectives", (op, link, near), profile)
        extra = EXTRAPOLATED_SPREAD + EXTRA_PER_DOUBLING * abs(math.log2(near / nodes))
        if grid is None:
            return None
    got = _measured(grid, origin, (float(gpus), float(nbytes)))
    if not extra:
        return got
    return Measured(got.value, got.source, "extrapolated", min(MAX_SPREAD, got.spread + extra))


@functools.lru_cache(maxsize=256)
def _measured_nodes(op: str, link: str, profile: str | None) -> tuple[float, ...]:
    """The server counts an op was measured at on a link (read once per op and link)."""
    rows, origin = _rows("collectives", profile, None) if profile else ((), "")
    if not origin:  # the shipped rows' groups (op, link, servers)
        return tuple(sorted({k[2] for k in shipped_keys("collectives") if k[0] == op and k[1] == link}))
    return tuple(sorted({r["nodes"] for r in rows if r["op"] == op and r["link"] == link}))


def _collective_fallback(op: str, link: str, gpus: int, nodes: int, nbytes: float) -> Measured:
    """A link without rows: the measured link of its kind (inside a server, or between servers) with the
    nearest nominal bandwidth, scaled by the nominal ratio; else its nominal bandwidth times the median
    achieved/nominal ratio of the measured links."""
    import statistics  # on use: the statistics module costs more to import than most commands use it

    mine = nominal_gbs(link)
    peer = _nearest_link(link) if mine else None
    if peer is not None and mine:
        for candidate in (op, *OP_PROXIES[op]):
            got = _collective_own(candidate, peer, gpus, nodes, nbytes, None)
            nominal = nominal_gbs(peer)
            if got is not None and nominal:
                basis = f"scaled from {peer}" + ("" if candidate == op else f" {candidate}")
                return Measured(got.value * mine / nominal, got.source, basis, got.spread + SCALED_SPREAD)
    ratios = []
    for other in _shipped_links():
        nominal = nominal_gbs(other) if other != link else None
        for candidate in (op, *OP_PROXIES[op]):
            got = _collective_own(
                candidate, other, gpus, 1 if other.startswith(("nvlink", "pcie")) else nodes, nbytes, None
            )
            if got is not None and nominal:
                ratios.append(got.value / nominal)
                break
    if mine is None or not ratios:
        known = ", ".join(sorted(_link_nominals()))
        raise InputError(
            f"link {link!r} is not a known link key (known: {known})",
            field="link",
            value=link,
            problem="is not a known link",
            accepted=known,
        )
    nominal_of = _link_nominals()[link][1]
    source = f"{link} nominal {mine:g} GB/s ({nominal_of}) x median achieved/nominal of {len(ratios)} links"
    return Measured(mine * statistics.median(ratios), source, "datasheet fallback", FALLBACK_SPREAD)


# --- between servers: the measured rows where they are, NCCL's cost model on their bandwidth elsewhere ------
RING_OPS = ("all_reduce", "all_gather", "reduce_scatter")
PLATEAU_FROM = 0.25
"""Rows at sizes from this share of a sweep's largest size up form its bandwidth plateau (the beta)."""


def _network(op: str, link: str, gpus: int, nodes: int, nbytes: float, profile: str | None) -> Measured:
    """A collective across servers: the link's own rows at exactly this op, server count and rank count;
    elsewhere NCCL's own cost model (alphabeta: its latency per step of the algorithm it would pick, plus
    the bytes over the bus bandwidth) on the per-GPU network bandwidth measured at the nearest server count
    (of this link, else the nearest measured network link scaled by the nominal ratio), widened per
    doubling of servers away from the measured count."""
    grid, origin = _grids("collectives", (op, link, float(nodes)), profile)
    if grid is not None and float(gpus) in grid.axes[0]:
        return _measured(grid, origin, (float(gpus), float(nbytes)))
    # On 2 servers NCCL's tree passes the NICs' rate for the reductions; a pair or an all-to-all never does.
    wide = nodes > 2 or op not in RING_OPS
    per_gpu, source, measured_nodes, scaled = _nic_share(link, nodes, profile, wide)
    ppn = max(1, gpus // nodes)
    if op in RING_OPS:
        beta = per_gpu * ppn  # a ring's bus bandwidth: the NICs of the group's ranks on each server
    elif op == "all_to_all":
        beta = per_gpu * (gpus - 1) / max(gpus - ppn, 1)  # each rank's off-server share through its own
    else:
        beta = per_gpu  # one pair, one GPU's share of the network
    value = alphabeta.effective_busbw_gbs(op, gpus, nodes, nbytes, beta)
    spread = EXTRAPOLATED_SPREAD + EXTRA_PER_DOUBLING * abs(math.log2(nodes / measured_nodes))
    basis = f"alpha-beta (NCCL latency, {link} busbw at {measured_nodes:g} servers"
    basis += f" scaled from {scaled})" if scaled else ")"
    return Measured(
        value,
        f"{source}; {alphabeta.NCCL_SOURCE}",
        basis,
        min(MAX_SPREAD, spread + (SCALED_SPREAD if scaled else 0.0)),
    )


def _nic_share(
    link: str, nodes: int, profile: str | None, prefer_wide: bool
) -> tuple[float, str, float, str]:
    """(GB/s of ring bus bandwidth per rank on a server, its source, the server count it was measured at,
    the link it was scaled from or ''): the measured plateau of the link's ring collectives at the server
    count nearest `nodes`, else of the measured network link of nearest nominal bandwidth scaled by the
    nominal ratio. `prefer_wide`: a sweep past 2 servers is preferred, a peer link's if need be (on 2
    servers NCCL's tree passes the NICs' rate: an aberration, say the nccl-tests maintainers in issue 309)."""
    mine = nominal_gbs(link)
    candidates = [(link, _plateaus(link, profile), 1.0)]
    peers = sorted(
        {x for x in _shipped_links() if _between_servers(x)} - {link},
        key=lambda x: (abs(math.log((nominal_gbs(x) or 1.0) / (mine or 1.0))), x),
    )
    for peer in peers:
        theirs = nominal_gbs(peer)
        if mine and theirs:
            candidates.append((peer, _plateaus(peer, None), mine / theirs))
    usable = [c for c in candidates if c[1]]
    wide = [c for c in usable if any(k > 2 for k in c[1])] if prefer_wide else []
    if not usable:
        raise InputError(
            f"link {link!r} has no measured network rows to scale from",
            field="link",
            value=link,
            problem="has no measured rows",
            accepted=", ".join(sorted(_link_nominals())),
        )

    def reach(c: tuple[str, dict[float, tuple[float, str]], float]) -> float:
        pool = [k for k in c[1] if k > 2] if wide else list(c[1])
        return min(abs(math.log(k / nodes)) for k in pool)

    # Its own link first; among peers the nearest nominal bandwidth, then the nearest measured server count.
    name, plateaus, ratio = min(
        wide or usable, key=lambda c: (c[0] != link, round(abs(math.log(c[2])), 6), reach(c), c[0])
    )
    pool = [k for k in plateaus if k > 2] if wide else list(plateaus)
    near = min(pool, key=lambda k: (abs(math.log(k / nodes)), k))
    value, source = plateaus[near]
    return value * ratio, source, near, "" if name == link else name


@functools.lru_cache(maxsize=64)
def _plateaus(link: str, profile: str | None) -> dict[float, tuple[float, str]]:
    """Per server count: the large-message bus bandwidth of the link's ring collectives per rank on a server
    (the mean of each sweep's plateau rows), with the sources."""
    if not profile:
        stored = _stored_plateaus()
        if stored is not None:
            return dict(stored.get(link, {}))
    return _plateaus_of(link, profile)


@functools.cache
def _stored_plateaus() -> dict[str, dict[float, tuple[float, str]]] | None:
    """Every shipped link's plateaus, from the knowledge cache (None: no cache)."""

    def build() -> dict[str, list[list[Any]]]:
        return {link: [[k, *v] for k, v in _plateaus_of(link, None).items()] for link in _shipped_links()}

    stored = stored_value("collectives", "plateaus", build)
    if stored is None:
        return None
    return {link: {k: (v, source) for k, v, source in rows} for link, rows in stored.items()}


def _plateaus_of(link: str, profile: str | None) -> dict[float, tuple[float, str]]:
    import statistics  # on use: the statistics module costs more to import than most commands use it

    rows = [
        r
        for r in _rows("collectives", profile, None)[0]
        if r["link"] == link and r["op"] in RING_OPS and r["nodes"] > 1 and r["busbw_gbs"] > 0
    ]
    if not rows and profile:
        return _plateaus(link, None)
    sweeps: dict[tuple[str, float, float, str], list[dict[str, float]]] = {}
    for r in rows:
        sweeps.setdefault((r["op"], r["nodes"], r["gpus"], r["source"]), []).append(r)
    per_nodes: dict[float, list[tuple[float, str]]] = {}
    for (_, nodes, gpus, source), sweep in sweeps.items():
        top = max(r["nbytes"] for r in sweep)
        plateau = [r["busbw_gbs"] for r in sweep if r["nbytes"] >= PLATEAU_FROM * top]
        per_nodes.setdefault(nodes, []).append((statistics.fmean(plateau) / (gpus / nodes), source))
    return {
        k: (statistics.fmean(v for v, _ in got), "; ".join(sorted({s for _, s in got})))
        for k, got in per_nodes.items()
    }


def _between_servers(link: str) -> bool:
    return link.startswith(("ib-", "roce-", "eth-", "efa-", "rdma-"))


def _family(link: str) -> str:
    return (
        "network" if _between_servers(link) else link.rstrip("0123456789").split("-")[0].rstrip("0123456789")
    )


@functools.cache
def _shipped_links() -> tuple[str, ...]:
    """The link keys the shipped collective rows measured."""
    return tuple(sorted({k[1] for k in shipped_keys("collectives")}))


@functools.lru_cache(maxsize=64)
def _nearest_link(link: str) -> str | None:
    """The measured link of the same family (NVLink, PCIe, Infinity Fabric, network) with the nearest nominal
    bandwidth, else of the same kind (inside a server or between servers)."""
    mine = nominal_gbs(link) or 1.0
    measured = [x for x in _shipped_links() if x != link]
    same_kind = [x for x in measured if _between_servers(x) == _between_servers(link) and nominal_gbs(x)]
    if not same_kind:
        return None
    return min(
        same_kind,
        key=lambda x: (_family(x) != _family(link), abs(math.log((nominal_gbs(x) or 1.0) / mine)), x),
    )


# Nominal one-direction bandwidth per GPU of the links outside the catalogue's GPU entries, GB/s: PCIe x16
# per direction (knowledge/assumptions.toml [comm]) and network rails per GPU (assumptions.toml [fabric]; a
# per-node figure is shared by the 8 GPUs of a node).
# NVLink and Infinity Fabric keys take half the catalogue's per-GPU both-directions figure (nominal_gbs).
LINK_NOMINAL_GBS: dict[str, tuple[float, str]] = {
    "efa-400": (50.0, "EFA 400 Gb/s per GPU (AWS P5en, P6-B200: 8x 50 GB/s per node, stas00/ml-engineering)"),
    "pcie3": (15.75, "assumptions.toml comm.pcie_gen3_gbs"),
    "pcie4": (31.5, "assumptions.toml comm.pcie_gen4_gbs"),
    "pcie5": (63.0, "assumptions.toml comm.pcie_gen5_gbs"),
    "ib-hdr200": (25.0, "assumptions.toml fabric.ib-hdr: 200 Gb/s per GPU"),
    "ib-ndr400": (50.0, "assumptions.toml fabric.ib-ndr: 400 Gb/s per GPU"),
    "roce-200": (25.0, "assumptions.toml fabric.roce-200: 200 Gb/s per GPU"),
    "eth-100": (
        1.5625,
        "assumptions.toml fabric.eth-100: 100 Gb/s per node, an eighth per GPU of an 8-GPU node",
    ),
}


@functools.cache
def _link_nominals() -> dict[str, tuple[float, str]]:
    out = dict(LINK_NOMINAL_GBS)
    from advisor.catalog.loader import load_knowledge

    # Every fabric of the catalogue is a link key (a per-node figure shared by the 8 GPUs of a server).
    for name, fabric in load_knowledge().assumptions.fabric.items():
        key = FABRIC_LINKS.get(name, name)
        if key not in out:
            out[key] = (fabric.gbs_per_gpu(8), f"assumptions.toml fabric.{name}: {fabric.name}")
    for g in _catalogue():
        key = link_key(g, across_nodes=False)
        if key not in LINK_NOMINAL_GBS and g.interconnect.gbs:
            half = g.interconnect.gbs / 2
            if key not in out or half > out[key][0]:
                out[key] = (
                    half,
                    f"gpus.toml {g.id} interconnect {g.interconnect.gbs:g} GB/s both directions / 2",
                )
    return out


def nominal_gbs(link: str) -> float | None:
    """A link key's nominal one-direction bandwidth per GPU (None: not a known key)."""
    found = _link_nominals().get(link)
    return found[0] if found else None


def link_key(gpu: str | Gpu, *, across_nodes: bool, fabric: str | None = None) -> str:
    """The link key of a GPU's traffic inside its server (across_nodes False) or between servers: the fabric
    key of knowledge/assumptions.toml (`fabric`, else the GPU's default) mapped to its measured-row key. A
    rack whose NVLink domain spans servers (GB200 NVL72) keeps NVLink across them."""
    g = _gpu(gpu) if isinstance(gpu, str) else gpu
    ic = g.interconnect
    if across_nodes and not (ic.kind == "nvswitch" and ic.domain > g.gpus_per_node):
        key = fabric or g.fabric
        return FABRIC_LINKS.get(key, key)
    generation = NVLINK_GENERATION.get(g.architecture)
    if ic.kind in ("nvswitch", "nvlink-mesh") and generation:
        return f"nvlink{generation}"
    if ic.kind == "nvlink-bridge" and generation:
        return f"nvlink{generation}-bridge"
    if ic.kind == "infinity-fabric":
        return "xgmi"
    return f"pcie{g.pcie_gen or 4}"
