"""Provides `gpu-advisor prices update`: reads SkyPilot-format price catalogues (catalogs/v8/<cloud>/vms.csv),
maps accelerator names to catalogue GPU ids (unknown names are listed, never guessed), validates every row and
saves the offers, dated today, atomically in the user data directory."""

from __future__ import annotations

import csv
import io
import math
import re
import statistics
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from advisor.catalog.loader import Knowledge
from advisor.catalog.prices import Offer, Pricing, UserPrices, load_user_prices, today
from advisor.catalog.skypilot import SHARED_NAME, gpu_of
from advisor.question.checks import shown
from advisor.question.errors import AdvisorError, InputError

DEFAULT_URL = "https://raw.githubusercontent.com/skypilot-org/skypilot-catalog/master/catalogs/v8"
CLOUDS = ("aws", "gcp", "lambda", "runpod", "azure")
REQUIRED = ("AcceleratorName", "AcceleratorCount", "Region", "Price")

# Where a PCIe part shares its SkyPilot name with the SXM part, the PCIe id (the inverse of the launch
# artefacts' SHARED_NAME: one map for both directions).
PCIE = {sxm: pcie for pcie, sxm in SHARED_NAME.items()}
# Lambda's descriptions (skypilot-lambda source in prices.toml): these A100 instances are PCIe cards.
LAMBDA_PCIE = {"gpu_1x_a100", "gpu_2x_a100", "gpu_4x_a100"}


@dataclass(slots=True, repr=False)
class Parsed:
    """What one catalogue file gave: offers, rows skipped as invalid, and accelerator names not mapped."""

    offers: list[Offer] = field(default_factory=list)
    invalid: list[str] = field(default_factory=list)
    unknown: dict[str, int] = field(default_factory=dict)


def gpu_id(cloud: str, name: str, instance: str, gpu_info: str, knowledge: Knowledge) -> str | None:
    """The catalogue id of a SkyPilot accelerator (the GPU whose id or alias it is, as launch artefacts read
    it: advisor/catalog/skypilot.py), or None when the name is not one the catalogue holds."""
    gid = gpu_of(knowledge, name)
    if gid is None:
        return None
    hint = f"{instance} {gpu_info}".lower()
    pcie = "pcie" in hint or (cloud == "lambda" and instance in LAMBDA_PCIE)
    if pcie and "sxm" not in instance.lower() and gid in PCIE:
        return PCIE[gid]
    return gid


def _number(text: str | None) -> float | None:
    text = (text or "").strip()
    if not text:
        return None
    value = float(text)  # ValueError marks the row invalid
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"bad number {text!r}")
    return value


# Bounds past every real catalogue row (the largest VM has 16 GPUs; no GPU rents above $100/GPU-hour), which
# keep a hostile catalogue from storing a $0 offer (a price that rounds to 0) or a 1e300-GPU instance.
MAX_GPUS_PER_INSTANCE = 128
USD_PER_GPU_HOUR = (1e-4, 1000.0)


# Names a catalogue row may carry into the store and every later output: printable, no terminal escapes,
# and not starting like a spreadsheet formula (=, +, -, @), since exports are opened in spreadsheets.
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9 _.:/()+\-]{0,127}")


def _checked_names(**names: str) -> None:
    """ValueError naming the first column whose text is not a plain catalogue name."""
    for column, text in names.items():
        if text and not _SAFE_NAME.fullmatch(text):
            raise ValueError(f"{column} {shown(text, 40)} is not a plain name")


def _checked_prices(
    count: float, price: float | None, spot: float | None
) -> tuple[float | None, float | None]:
    """The row's prices, each None when absent; ValueError when one is outside the accepted $/GPU-hour."""
    lo, hi = USD_PER_GPU_HOUR
    for label, value in (("Price", price), ("SpotPrice", spot)):
        if value and not lo <= value / count <= hi:
            raise ValueError(
                f"{label} {value:g} is ${value / count:.3g}/GPU-hour; accepted: ${lo:g} to ${hi:g}"
            )
    return price, spot


def _rows(text: str, where: str) -> list[dict[str, str]]:
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in REQUIRED if c not in (reader.fieldnames or [])]
    if missing:
        raise InputError(
            f"{where}: not a SkyPilot vms.csv (missing column(s) {', '.join(missing)}); expected "
            "InstanceType, AcceleratorName, AcceleratorCount, vCPUs, MemoryGiB, Region, Price, SpotPrice"
        )
    return list(reader)


def parse_catalogue(cloud: str, text: str, where: str, knowledge: Knowledge, source: str) -> Parsed:
    """Offers of one cloud's vms.csv: on-demand per region, spot as the median of its zones, same-price
    regions folded into one offer. GCP GPU rows are priced without their host VM (marked GPU only)."""
    out = Parsed()
    groups: dict[tuple[str, str, int, str], dict[Pricing, list[float]]] = {}
    for line, row in enumerate(_rows(text, where), start=2):
        name = (row.get("AcceleratorName") or "").strip()
        if not name:
            continue  # a host VM without GPUs (GCP prices GPUs apart)
        instance = (row.get("InstanceType") or "").strip() or f"{name}x{row.get('AcceleratorCount', '?')}"
        try:
            count = _number(row.get("AcceleratorCount"))
            price, spot = _number(row.get("Price")), _number(row.get("SpotPrice"))
            if count is None or not 1 <= count <= MAX_GPUS_PER_INSTANCE or count != int(count):
                raise ValueError(
                    f"AcceleratorCount {row.get('AcceleratorCount')!r} is not a whole GPU count from 1 to "
                    f"{MAX_GPUS_PER_INSTANCE}"
                )
            price, spot = _checked_prices(count, price, spot)
            region = (row.get("Region") or "").strip()
            if not region:
                raise ValueError("empty Region")
            _checked_names(AcceleratorName=name, InstanceType=instance, Region=region)
        except ValueError as exc:
            out.invalid.append(f"{where}:{line}: {exc}")
            continue
        gid = gpu_id(cloud, name, instance, row.get("GpuInfo", ""), knowledge)
        if gid is None:
            out.unknown[name] = out.unknown.get(name, 0) + 1
            continue
        prices = groups.setdefault((instance, gid, int(count), region), {"on-demand": [], "spot": []})
        if price:
            prices["on-demand"].append(price)
        if spot:
            prices["spot"].append(spot)
    out.offers = _fold(cloud, groups, source)
    return out


def _fold(
    cloud: str, groups: dict[tuple[str, str, int, str], dict[Pricing, list[float]]], source: str
) -> list[Offer]:
    """One offer per instance, plan and price: regions at the same price are folded into the first."""
    date = today()
    by_price: dict[tuple[str, str, int, Pricing, float], list[str]] = {}
    for (instance, gid, count, region), prices in groups.items():
        for plan, values in prices.items():
            if values:
                usd = round(statistics.median(values), 6)
                by_price.setdefault((instance, gid, count, plan, usd), []).append(region)
    offers = []
    for (instance, gid, count, plan, usd), regions in sorted(by_price.items()):
        regions.sort()
        note = (
            f"same price in {len(regions)} regions: "
            f"{', '.join(regions[:6])}{'...' if len(regions) > 6 else ''}"
            if len(regions) > 1
            else ""
        )
        offers.append(
            Offer(
                provider=cloud,
                region=regions[0],
                instance=instance,
                gpu=gid,
                gpus=count,
                pricing=plan,
                usd_per_hour=usd,
                includes_host=cloud != "gcp",
                date=date,
                source=source,
                note=("GPU only (GCP prices the host VM apart); " if cloud == "gcp" else "") + note,
            )
        )
    return offers


# A SkyPilot v8 vms.csv is a few MB (AWS, the largest, is under 20 MB): a larger file or response is not one.
MAX_CATALOGUE_BYTES = 64 << 20


def _read_capped(stream: BinaryIO, where: str) -> str:
    """At most MAX_CATALOGUE_BYTES of a catalogue, as text; more is refused, never read on without bound."""
    data = stream.read(MAX_CATALOGUE_BYTES + 1)
    if len(data) > MAX_CATALOGUE_BYTES:
        raise InputError(
            f"{where} is larger than {MAX_CATALOGUE_BYTES >> 20} MiB; accepted: a SkyPilot v8 vms.csv",
            field="url",
            value=where,
            problem=f"is larger than {MAX_CATALOGUE_BYTES >> 20} MiB",
            accepted="a SkyPilot v8 vms.csv",
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{where} is not UTF-8 text; accepted: a SkyPilot v8 vms.csv") from None


def _catalogue_file(path: Path) -> str:
    """A vms.csv from a folder: a regular file (never a FIFO or a device), read with the size cap."""
    if not path.is_file():
        raise InputError(f"{path} is not a regular file; accepted: a SkyPilot v8 vms.csv")
    with path.open("rb") as stream:
        return _read_capped(stream, str(path))


def read_folder(folder: Path, clouds: tuple[str, ...]) -> dict[str, tuple[str, str]]:
    """cloud -> (csv text, where) for each cloud with a vms.csv under folder (or folder/catalogs/v8)."""
    if not folder.is_dir():
        raise InputError(f"folder {folder}: no such folder")
    found = {}
    for cloud in clouds:
        for path in (folder / cloud / "vms.csv", folder / "catalogs" / "v8" / cloud / "vms.csv"):
            if path.exists():
                found[cloud] = (_catalogue_file(path), str(path))
                break
    if not found:
        raise InputError(f"folder {folder}: no <cloud>/vms.csv for any of {', '.join(clouds)}")
    return found


def read_url(base: str, clouds: tuple[str, ...], timeout: float = 15.0) -> dict[str, tuple[str, str]]:
    """cloud -> (csv text, url); any network failure stops the whole update (old prices are kept).

    Only http(s) URLs: a file is given with --from (its own checks), and urllib's other schemes (file://,
    ftp://, data:) would read what a web address should not."""
    scheme = urllib.parse.urlsplit(base).scheme.lower()
    if scheme not in ("http", "https") or not urllib.parse.urlsplit(base).netloc:
        raise InputError(
            field="url",
            value=base,
            problem="is not an http(s) address",
            accepted="an http(s) address of a catalogs/v8 folder",
        )
    found = {}
    for cloud in clouds:
        url = f"{base.rstrip('/')}/{cloud}/vms.csv"
        try:
            with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 (http(s) checked above)
                found[cloud] = (_read_capped(response, url), url)
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                continue  # SkyPilot has no catalogue for this cloud
            raise AdvisorError(f"cannot read {url}: HTTP {exc.code}; old prices kept") from exc
        except (urllib.error.URLError, OSError, TimeoutError) as exc:
            reason = getattr(exc, "reason", exc)
            raise AdvisorError(
                f"cannot reach {url} ({reason}); old prices kept "
                "(offline? read a local copy of catalogs/v8 instead)"
            ) from exc
    return found


@dataclass(slots=True, repr=False)
class Update:
    """The result of reading catalogues: the new file's offers and what was left out."""

    prices: UserPrices
    parsed: dict[str, Parsed]
    previous: UserPrices | None


def build_update(knowledge: Knowledge, texts: dict[str, tuple[str, str]], source: str) -> Update:
    """Parse every catalogue and merge with the earlier refresh (clouds not read this time keep their
    offers)."""
    parsed = {
        cloud: parse_catalogue(cloud, text, where, knowledge, source)
        for cloud, (text, where) in texts.items()
    }
    previous = load_user_prices()
    kept = [o for o in (previous.offers if previous else ()) if o.provider not in parsed]
    offers = tuple(kept + [o for p in parsed.values() for o in p.offers])
    if not any(p.offers for p in parsed.values()):
        raise AdvisorError(f"no usable GPU offer in {source}; old prices kept")
    return Update(UserPrices(fetched=today(), source=source, offers=offers), parsed, previous)


def summary(update: Update, knowledge: Knowledge) -> list[str]:
    """One line per cloud (offers, invalid rows, unknown names) and per GPU whose cheapest price changes."""
    from advisor.catalog.loader import all_offers

    lines = []
    for cloud, p in update.parsed.items():
        lines.append(
            f"{cloud}: {len(p.offers)} offers, {len(p.invalid)} invalid row(s) skipped"
            + (
                "; unknown accelerator names (not mapped, not guessed): "
                + ", ".join(f"{n} ({c} rows)" for n, c in sorted(p.unknown.items()))
                if p.unknown
                else ""
            )
        )
        lines += [f"  invalid: {msg}" for msg in p.invalid[:5]]
    before: dict[tuple[str, str], float] = {}
    for o in all_offers(knowledge):
        if o.pricing == "on-demand" and o.provider in update.parsed:
            key = (o.provider, o.gpu)
            before[key] = min(before.get(key, float("inf")), o.usd_per_gpu_hour)
    after: dict[tuple[str, str], float] = {}
    for o in update.prices.offers:
        if o.pricing == "on-demand" and o.provider in update.parsed:
            after[(o.provider, o.gpu)] = min(after.get((o.provider, o.gpu), float("inf")), o.usd_per_gpu_hour)
    for key in sorted(after):  # only GPUs the new catalogue prices
        old, new = before.get(key), after.get(key)
        if old is None or new is None or abs(old - new) > 1e-6:
            fmt = lambda x: "-" if x is None else f"${x:.2f}"  # noqa: E731
            lines.append(f"  {key[0]} {key[1]}: cheapest on-demand {fmt(old)} -> {fmt(new)}/GPU-h")
    return lines
