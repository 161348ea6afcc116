"""Provides `gpu-advisor prices update`'s handler: reads the flags, runs the catalogue's refresh, prints,
saves."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from advisor.catalog.prices import today, user_prices_path
from advisor.catalog.prices_update import CLOUDS, DEFAULT_URL, build_update, read_folder, read_url, summary
from advisor.question.errors import InputError
from advisor.question.records import dump


def update_cli(args: argparse.Namespace) -> int:
    """`gpu-advisor prices update [--from DIR | --url URL] [--cloud ...] [--dry-run]`."""
    from advisor.catalog import load_knowledge
    from advisor.catalog.userdata import locked, write_text_atomic

    clouds = tuple(c.strip().lower() for c in (args.cloud or ",".join(CLOUDS)).split(",") if c.strip())
    bad = [c for c in clouds if c not in CLOUDS]
    if bad:
        raise InputError(f"--cloud {', '.join(bad)}: unknown; accepted: {', '.join(CLOUDS)}")
    knowledge = load_knowledge()
    if args.from_dir:
        texts = read_folder(Path(args.from_dir), clouds)
        source = (
            f"SkyPilot-format catalogue read from {Path(args.from_dir).resolve()} on {today().isoformat()}"
        )
    else:
        base = args.url or DEFAULT_URL
        texts = read_url(base, clouds)
        source = f"SkyPilot catalogue {base} fetched {today().isoformat()}"
    path = user_prices_path()
    # Read, merge and write under the store's lock: parallel updates of other clouds each keep the others'.
    with locked("prices", path.parent):
        update = build_update(knowledge, texts, source)
        for line in summary(update, knowledge):
            print(line)
        if args.dry_run:
            print(
                f"dry run: would write {len(update.prices.offers)} offers dated {today().isoformat()} "
                f"to {path}"
            )
            return 0
        write_text_atomic(
            path, json.dumps(dump(update.prices, mode="json"), indent=1, allow_nan=False) + "\n"
        )
    print(
        f"wrote {len(update.prices.offers)} offers dated {today().isoformat()} to {path} "
        "(the shipped snapshot stays as the fallback)"
    )
    return 0
