"""Measures this node's operation table with `gpu-advisor probe` and writes it as row sets with provenance.

On a GPU machine (the device machine: python3 there holds torch), from the repository root:

    python3 benchmarks/device/probe_check.py --commit SHA [--quick] [--name NAME]

It installs the wheels carried in .whl/ (pydantic and its three companions, which that image lacks; see
docs/probe.md for the one pip download that fetches them), runs `gpu-advisor probe` under a time limit with
a throw-away data directory, and writes into $OUT (or ./probe-out):

    profile.json      the stored node profile, as the probe wrote it
    probe.log         the probe's progress lines and notes, with nvidia-smi's view of the GPUs
    gemm.csv, attention.csv, memory.csv, collectives.csv
                      the rows in the columns of knowledge/operations/*.csv, source
                      gpu-advisor@SHA:benchmarks/device/results/<profile file>, dated the day measured

Commit profile.json as benchmarks/device/results/<name>-probe-<date>.json; the CSV rows can then be appended
to knowledge/operations/*.csv. `--rows PROFILE.json` only converts a stored profile (no GPU needed).
A whole run takes about 2 minutes on one H200 (under 3 with torch's start-up); --quick under one.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from advisor.catalog.node_profile import COLUMNS, SECTIONS, check_payload  # noqa: E402

LIMIT_S = 240


def _install_wheels(site: Path) -> None:
    wheels = sorted((ROOT / ".whl").glob("*.whl"))
    if not wheels:
        return
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile"]
    subprocess.run(
        [*pip, "--no-cache-dir", "--upgrade", "--target", str(site), *map(str, wheels)], check=True
    )


def _nvidia_smi() -> str:
    query = "--query-gpu=index,name,memory.total,driver_version,clocks.max.sm,power.limit"
    try:
        run = subprocess.run(
            ["nvidia-smi", query, "--format=csv"], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"nvidia-smi: {exc}"
    return run.stdout.strip()


def file_name(profile: dict) -> str:
    """The file a profile is committed as under benchmarks/device/results/."""
    return f"{profile['name']}-probe-{profile['measured_on']}.json"


def write_rows(profile: dict, commit: str, out: Path, where: str | None = None) -> dict[str, int]:
    """The profile's rows as knowledge/operations CSVs in out, each citing the committed profile file."""
    profile = check_payload(profile)
    source = f"gpu-advisor@{commit}:{where or 'benchmarks/device/results/' + file_name(profile)}"
    stack = profile["cuda"] if profile["cuda"].startswith("hip") else f"CUDA {profile['cuda']}"
    device = profile.get("device_name") or profile["gpu"]
    setup = f"{profile['gpus']} x {device}, torch {profile['torch']}, {stack}"
    counts = {}
    for section in SECTIONS:
        path = out / f"{section}.csv"
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=COLUMNS[section], lineterminator="\n")
            writer.writeheader()
            for row in profile[section]:
                note = f"gpu-advisor probe on {setup}; {row['note']}"
                cells = {**row, "source": source, "note": note}
                if "causal" in cells:
                    cells["causal"] = "true" if cells["causal"] else "false"
                writer.writerow(cells)
        counts[section] = len(profile[section])
    return counts


def _probe(args: argparse.Namespace, out: Path) -> dict:
    site = Path(tempfile.mkdtemp(prefix="probe-site-"))
    _install_wheels(site)
    data = Path(tempfile.mkdtemp(prefix="probe-data-"))
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            p for p in (str(ROOT), str(site), os.environ.get("PYTHONPATH", "")) if p
        ),
        "GPU_ADVISOR_DATA_DIR": str(data),
        "GPU_ADVISOR_CACHE_DIR": str(data / "cache"),
        "PYTHONUNBUFFERED": "1",
    }
    command = [sys.executable, "-m", "advisor.cli.main", "probe", "--format", "json"]
    command += ["--quick"] * args.quick + (["--name", args.name] if args.name else [])
    run = subprocess.run(command, capture_output=True, text=True, env=env, timeout=LIMIT_S, cwd=ROOT)
    (out / "probe.log").write_text(
        f"{_nvidia_smi()}\n\n$ {' '.join(command)}\n{run.stderr}exit {run.returncode}\n"
    )
    print(run.stderr, file=sys.stderr, end="")
    if run.returncode != 0:
        raise SystemExit(f"probe_check: gpu-advisor probe exited {run.returncode} (see {out / 'probe.log'})")
    profile = json.loads(run.stdout)
    (out / "profile.json").write_text(json.dumps(profile, indent=1) + "\n")
    return profile


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commit", default="unknown", help="the commit measured (git rev-parse HEAD, here)")
    parser.add_argument("--quick", action="store_true", help="the probe's shorter grid")
    parser.add_argument("--name", help="the profile name (default: the probe's <gpu>-<host>)")
    parser.add_argument("--rows", metavar="PROFILE.json", help="only convert a stored profile to CSV rows")
    parser.add_argument("--out", help="output folder (default $OUT, else ./probe-out)")
    args = parser.parse_args()
    out = Path(args.out or os.environ.get("OUT") or "probe-out")
    out.mkdir(parents=True, exist_ok=True)
    if args.rows:
        where = Path(args.rows).resolve()
        inside = where.is_relative_to(ROOT)
        profile = json.loads(where.read_text())
        counts = write_rows(profile, args.commit, out, str(where.relative_to(ROOT)) if inside else None)
    else:
        profile = _probe(args, out)
        counts = write_rows(profile, args.commit, out)
    what = f"{profile['gpus']} x {profile['gpu']}, {profile['measured_on']}"
    print(f"{profile['name']} ({what}): {counts} -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
