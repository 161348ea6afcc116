"""Provides the schema of tco.toml: sourced figures of ownership cost, operations policy and financing."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Annotated, Literal, TypedDict, cast

from advisor.catalog.assumptions import Figure
from advisor.catalog.common import FIGURES, Source
from advisor.catalog.loader import Knowledge, cached_records, validate
from advisor.question.errors import KnowledgeError


# Each section is a typing.TypedDict (catalog/common.Figures), its optional figures in a base class with
# total=False: typing.NotRequired is not recognised under `from __future__ import annotations` on Python 3.11.
class _HardwareOptional(TypedDict, total=False):
    network_eth_per_node_usd: Figure
    install_fraction: Figure


class Hardware(_HardwareOptional):
    """Non-GPU hardware prices."""

    server_8gpu_sxm_usd: Figure
    server_pcie_usd: Figure
    workstation_usd: Figure
    network_ib_per_gpu_usd: Figure
    residual_value_fraction: Figure


class _PowerOptional(TypedDict, total=False):
    off_peak_usd_kwh: Figure


class Power(_PowerOptional):
    """Tariffs, PUE and non-GPU server power."""

    electricity_usd_kwh: Figure
    pue: Figure
    server_overhead_w_per_gpu: Figure


class Space(TypedDict):
    """Data-centre space."""

    colocation_usd_per_kw_month: Figure


class _StaffOptional(TypedDict, total=False):
    gpus_per_engineer: Figure


class Staff(_StaffOptional):
    """Operations staff."""

    engineer_usd_year: Figure


class Operations(TypedDict):
    """The field guides' operations policy figures and measured failure rates."""

    maintenance_fraction_per_year: Figure
    hardware_failure_rate_per_month: Figure
    hardware_failure_target_per_month: Figure
    target_utilization: Figure
    max_queue_wait_min: Figure
    queue_levels: Figure
    idle_max_fraction: Figure
    scale_out_utilization: Figure
    scale_in_instance_cost_usd: Figure
    reclaim_start_hour: Figure
    reclaim_end_hour: Figure
    restart_limit: Figure
    hybrid_train_share: Figure
    elastic_reserve_fraction: Figure
    staged_first_purchase_fraction: Figure
    staged_review_interval_months: Figure
    budget_overrun_alert_fraction: Figure
    rack_space_reserve_fraction: Figure


class Lease(TypedDict):
    """Financing terms."""

    annual_rate: Figure
    term_months: Figure
    lease_to_purchase_ratio: Figure


class PowerCap(TypedDict):
    """A measured power-capping study and the guide's example policy."""

    cap_fraction: Figure
    energy_saving_fraction: Figure
    slowdown_fraction: Figure
    guide_training_cap_w: Figure
    guide_inference_cap_w: Figure
    guide_night_cap_fraction: Figure
    guide_night_start_hour: Figure
    guide_night_end_hour: Figure


class Shares(TypedDict):
    """The guide's typical shares of TCO."""

    hardware: Figure
    power: Figure
    staff: Figure
    space: Figure
    network: Figure


class Spot(TypedDict):
    """Preemption notices."""

    aws_notice_s: Figure
    gcp_notice_s: Figure


@dataclass(frozen=True, slots=True, kw_only=True, repr=False, eq=False)
class TcoFigures:
    """All of tco.toml."""

    schema_version: Literal[1]
    sources: dict[str, Source]
    hardware: Annotated[Hardware, FIGURES]
    power: Annotated[Power, FIGURES]
    space: Annotated[Space, FIGURES]
    staff: Annotated[Staff, FIGURES]
    operations: Annotated[Operations, FIGURES]
    lease: Annotated[Lease, FIGURES]
    power_cap: Annotated[PowerCap, FIGURES]
    typical_shares: Annotated[Shares, FIGURES]
    spot: Annotated[Spot, FIGURES]
    missing: dict[str, str] = field(default_factory=dict)

    def source_keys(self) -> set[str]:
        """Every source key a figure cites."""
        keys: set[str] = set()
        for section in (
            self.hardware,
            self.power,
            self.space,
            self.staff,
            self.operations,
            self.lease,
            self.power_cap,
            self.typical_shares,
            self.spot,
        ):
            keys |= {fig.source for fig in cast("dict[str, Figure]", section).values()}
        return keys


@functools.lru_cache(maxsize=4)
def _load(knowledge: Knowledge) -> TcoFigures:
    return cached_records(knowledge.root, "tco.toml", _validated)


def _validated(raw: dict[str, object]) -> TcoFigures:
    figures: TcoFigures = validate(TcoFigures, raw, "tco.toml")
    unknown = figures.source_keys() - set(figures.sources)
    if unknown:
        raise KnowledgeError(f"knowledge/tco.toml: unknown source key(s) {', '.join(sorted(unknown))}")
    return figures


def load_tco(knowledge: Knowledge) -> TcoFigures:
    """The TCO figures of a knowledge base (read on first use: only ownership questions need them)."""
    return _load(knowledge)
