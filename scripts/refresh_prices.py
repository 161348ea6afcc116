"""Refresh the shipped price snapshot (knowledge/prices.toml) from dated public catalogues.

`gpu-advisor prices update` refreshes a user's own copy (in the data directory, dated the day it runs).
This script is for maintainers: it rewrites the offers of the shipped snapshot, each dated by its SOURCE
(the commit or generation date of the catalogue it was read from), never by the day the script runs.

Inputs, each tagged with a key of prices.toml's [sources] table (write that entry first: ref with the exact
commit, date, note on how the date is known):

  --skypilot CLOUD=PATH@KEY   a SkyPilot v8 vms.csv (or GPU rows of one, same header), parsed by the
                              project's own importer (advisor.catalog.prices_update.parse_catalogue)
  --cyclenerd PATH@KEY        Cyclenerd/google-cloud-pricing-cost-calculator pricing.yml (GCP instance
                              prices incl. GPUs; needs PyYAML, a dev dependency)

Offers of the refreshed sources are replaced; older offers of the same provider, instance and plan are
dropped (they are superseded); every other offer is kept as it is.

  python scripts/refresh_prices.py --skypilot oci=/tmp/catalog/oci/vms.csv@skypilot-oci \
      --cyclenerd /tmp/pricing.yml@cyclenerd-gcp-2026-07 [--dry-run]
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import sys
import tomllib
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from advisor.catalog.prices import Offer  # noqa: E402

# Cyclenerd's accelerator keys -> catalogue ids (its a2-ultragpu/a3 parts are SXM modules).
CYCLENERD_GPUS = {
    "a100": "a100-40gb-sxm",
    "a100-80gb": "a100-80gb-sxm",
    "h100-80gb": "h100-sxm",
    "h100-80gb-mega": "h100-sxm",
    "l4": "l4",
}
CYCLENERD_REGIONS = ("us-central1", "us-east4", "us-west1", "europe-west4")
# Cyclenerd's plans: hourly keys, and monthly committed-use keys turned hourly by its own 730 h month.
CYCLENERD_PLANS = {
    "hour": "on-demand",
    "hour_spot": "spot",
    "month_1y": "reserved-1y",
    "month_3y": "reserved-3y",
}
COMMITTED = {
    "reserved-1y": "committed use, month_1y / 730 h",
    "reserved-3y": "committed use, month_3y / 730 h",
}
HOURS_PER_MONTH = 730.0


def _split(spec: str, flag: str) -> tuple[str, str]:
    """'PATH@KEY' -> (PATH, KEY)."""
    path, sep, key = spec.rpartition("@")
    if not sep or not path or not key:
        raise SystemExit(f"{flag} {spec!r}: expected PATH@SOURCE_KEY")
    return path, key


def _source_date(sources: dict[str, dict], key: str) -> dt.date:
    """The date of a [sources] entry: every refreshed offer carries it."""
    entry = sources.get(key)
    if entry is None or not isinstance(entry.get("date"), dt.date):
        raise SystemExit(f"source {key!r}: add [sources.{key}] with a ref and a date to prices.toml first")
    return entry["date"]


def skypilot_offers(cloud: str, path: Path, key: str, date: dt.date) -> list[Offer]:
    """A SkyPilot v8 file through the project's importer, re-dated to the catalogue's own date."""
    from advisor.catalog import load_knowledge
    from advisor.catalog.prices_update import parse_catalogue

    parsed = parse_catalogue(cloud, path.read_text(encoding="utf-8"), str(path), load_knowledge(), key)
    for line in parsed.invalid:
        print(f"  invalid: {line}")
    if parsed.unknown:
        names = ", ".join(f"{n} ({c})" for n, c in sorted(parsed.unknown.items()))
        print(f"  {cloud}: accelerator names the catalogue does not have (left out): {names}")
    return [dataclasses.replace(o, date=date) for o in parsed.offers]


def _cyclenerd_rows(data: dict) -> list[tuple[str, str, int, str, str, float]]:
    """(instance, gpu id, count, region, plan, $/h) for every GPU instance type Cyclenerd prices."""
    rows = []
    for instance, spec in sorted(data["compute"]["instance"].items()):
        gpus = [(CYCLENERD_GPUS[k], int(v)) for k, v in spec.items() if k in CYCLENERD_GPUS]
        if len(gpus) != 1:
            continue  # no GPU, or one the catalogue does not map (g4 RTX PRO 6000)
        gid, count = gpus[0]
        for region in CYCLENERD_REGIONS:
            prices = spec.get("cost", {}).get(region, {})
            for field, plan in CYCLENERD_PLANS.items():
                value = prices.get(field)
                if value:
                    usd = value / HOURS_PER_MONTH if field.startswith("month") else value
                    rows.append((instance, gid, count, region, plan, round(float(usd), 5)))
    return rows


def cyclenerd_offers(path: Path, key: str, date: dt.date) -> list[Offer]:
    """GCP offers from Cyclenerd's pricing.yml, regions at one price folded into one offer (its note
    names them)."""
    import yaml

    rows = _cyclenerd_rows(yaml.safe_load(path.read_text(encoding="utf-8")))
    # G2 sells one L4 with five host sizes: keep the cheapest host per L4 count; A2/A3 types are kept.
    cheapest: dict[tuple[str, int], tuple[float, str]] = {}
    for instance, gid, count, _region, plan, usd in rows:
        if gid == "l4" and plan == "on-demand" and usd < cheapest.get((gid, count), (float("inf"), ""))[0]:
            cheapest[(gid, count)] = (usd, instance)
    keep = {inst for inst, gid, *_ in rows if gid != "l4"} | {inst for _usd, inst in cheapest.values()}
    folded: dict[tuple[str, str, int, str, float], list[str]] = defaultdict(list)
    for instance, gid, count, region, plan, usd in rows:
        if instance in keep:
            folded[(instance, gid, count, plan, usd)].append(region)
    offers = []
    for (instance, gid, count, plan, usd), regions in sorted(folded.items()):
        where = f"same price in {', '.join(regions)}" if len(regions) > 1 else f"{regions[0]} price"
        parts = (where, COMMITTED.get(plan, ""), "includes vCPUs, RAM and GPUs")
        note = "; ".join(x for x in parts if x)
        offers.append(
            Offer(
                provider="gcp",
                region=regions[0],
                instance=instance,
                gpu=gid,
                gpus=count,
                pricing=plan,
                usd_per_hour=usd,
                includes_host=True,
                date=date,
                source=key,
                note=note,
            )
        )
    return offers


def _offer_toml(o: Offer) -> str:
    """One [[offer]] table in prices.toml's layout."""
    note = o.note.replace("\\", "\\\\").replace('"', '\\"')
    return (
        f'[[offer]]\nprovider = "{o.provider}"\nregion = "{o.region}"\ninstance = "{o.instance}"\n'
        f'gpu = "{o.gpu}"\ngpus = {o.gpus}\npricing = "{o.pricing}"\nusd_per_hour = {o.usd_per_hour:g}\n'
        f"includes_host = {'true' if o.includes_host else 'false'}\ndate = {o.date.isoformat()}\n"
        f'source = "{o.source}"\nnote = "{note}"\n'
    )


def rewrite(text: str, new: list[Offer], keys: set[str]) -> tuple[str, int]:
    """prices.toml with the refreshed sources' offers replaced and superseded older offers dropped."""
    head, *blocks = text.split("\n[[offer]]\n")
    newest: dict[tuple[str, str, str], dt.date] = {}
    for o in new:
        k = (o.provider, o.instance, o.pricing)
        newest[k] = max(newest.get(k, o.date), o.date)
    kept, dropped = [], 0
    for block in blocks:
        row = tomllib.loads(block)
        superseded = newest.get((row["provider"], row["instance"], row["pricing"]))
        if row["source"] in keys or (superseded is not None and row["date"] < superseded):
            dropped += 1
            continue
        kept.append("[[offer]]\n" + block.rstrip("\n") + "\n")
    out = head.rstrip("\n") + "\n\n" + "\n".join(kept + [_offer_toml(o) for o in new])
    return out, dropped


def main(argv: list[str] | None = None) -> int:
    """Read the catalogues, rewrite knowledge/prices.toml (or print what would change with --dry-run)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--skypilot", action="append", default=[], metavar="CLOUD=PATH@KEY")
    ap.add_argument("--cyclenerd", metavar="PATH@KEY")
    ap.add_argument("--prices", default=str(ROOT / "knowledge" / "prices.toml"))
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args(argv)
    target = Path(args.prices)
    text = target.read_text(encoding="utf-8")
    sources = tomllib.loads(text).get("sources", {})
    new: list[Offer] = []
    for spec in args.skypilot:
        cloud, _, rest = spec.partition("=")
        path, key = _split(rest, "--skypilot")
        new += skypilot_offers(cloud.strip().lower(), Path(path), key, _source_date(sources, key))
    if args.cyclenerd:
        path, key = _split(args.cyclenerd, "--cyclenerd")
        new += cyclenerd_offers(Path(path), key, _source_date(sources, key))
    if not new:
        raise SystemExit("no offers read: give --skypilot and/or --cyclenerd")
    out, dropped = rewrite(text, new, {o.source for o in new})
    by = defaultdict(int)
    for o in new:
        by[(o.provider, o.source, o.date.isoformat())] += 1
    for (provider, key, date), n in sorted(by.items()):
        print(f"{provider}: {n} offers from {key} dated {date}")
    print(f"{len(new)} offers written, {dropped} replaced or superseded")
    if not args.dry_run:
        tomllib.loads(out)  # never write a file that does not parse
        target.write_text(out, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
