"""Read the transcribed source tables under knowledge/sources/ (standard library only).

Each file is a CSV whose leading '#' lines are its header: '# ref: owner/repo@<40-hex commit>:path' (required;
a web page that is the only readable copy of a table is cited by its https URL instead) and '# table: ...'
(required), then free notes. The first non-comment line names the columns.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path

REF = re.compile(r"^([\w.-]+/[\w.-]+@[0-9a-f]{40}:\S+|https://\S+)$")


@dataclass(frozen=True)
class SourceTable:
    """One transcribed table: where it came from and its rows as dicts of strings."""

    path: Path
    ref: str
    table: str
    notes: tuple[str, ...]
    rows: tuple[dict[str, str], ...]


def read_source(path: Path) -> SourceTable:
    """Parse one source file; a missing or malformed header is a hard error naming the file."""
    text = path.read_text(encoding="utf-8")
    header: dict[str, str] = {}
    notes: list[str] = []
    body: list[str] = []
    for line in text.splitlines():
        if line.startswith("#") and not body:
            key, _, value = line[1:].strip().partition(":")
            if key in ("ref", "table") and key not in header:
                header[key] = value.strip()
            else:
                notes.append(line[1:].strip())
        elif line.strip():
            body.append(line)
    for key in ("ref", "table"):
        if key not in header:
            raise SystemExit(f"{path.name}: header line '# {key}: ...' missing")
    if not REF.match(header["ref"]):
        raise SystemExit(
            f"{path.name}: ref {header['ref']!r} is not owner/repo@<40-hex commit>:path or an https URL"
        )
    rows = tuple(dict(r) for r in csv.DictReader(io.StringIO("\n".join(body) + "\n")))
    for i, r in enumerate(rows, start=1):
        if None in r or any(v is None for v in r.values()):
            raise SystemExit(f"{path.name}: row {i} has a different number of cells than the header")
    return SourceTable(path, header["ref"], header["table"], tuple(notes), rows)


def number(text: str) -> float | None:
    """'26,150' -> 26150.0; '' or 'n/a' -> None; '58.2%' -> 0.582."""
    t = text.strip().replace(",", "")
    if t in ("", "n/a", "-"):
        return None
    if t.endswith("%"):
        return float(t[:-1]) / 100.0
    return float(t)


def split_alt(text: str) -> tuple[str, str | None]:
    """'37556 (36108)' -> ('37556', '36108'); '5003' -> ('5003', None)."""
    m = re.match(r"^\s*([^()]*?)\s*\(([^()]*)\)\s*$", text)
    if m:
        return m.group(1), m.group(2).strip()
    return text.strip(), None


def fmt(x: float | int | None) -> str:
    """Deterministic text of a number: integers without a point, others with up to 10 significant digits."""
    if x is None:
        return ""
    if float(x).is_integer():
        return str(int(x))
    return f"{x:.10g}"


def write_csv(path: Path, columns: list[str], rows: list[dict[str, str]]) -> bytes:
    """Render rows with '\\n' line ends (same input, same bytes) and write them atomically."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({c: r.get(c, "") for c in columns})
    data = buf.getvalue().encode("utf-8")
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)
    return data
