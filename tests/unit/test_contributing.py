"""CONTRIBUTING.md's recipes, the README and the docs name and link only files that exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# A path in backticks: a file under one of the checkout's folders, or a top-level file with an extension.
PATH = re.compile(
    r"`((?:advisor|tui|knowledge|tests|scripts|benchmarks|docs|examples)/[\w./-]+|[\w-]+\.(?:md|toml))`"
)
LINK = re.compile(r"\]\(([^)#\s]+)\)")
RECIPES = ("Add a GPU", "Add a training stack", "Add a serving engine", "Add an input field")


def _named_paths(text: str) -> list[str]:
    return [p for p in PATH.findall(text) if "NAME" not in p]


def test_every_recipe_is_there_and_names_files_and_a_test() -> None:
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    sections = re.split(r"^## \d\. ", text, flags=re.MULTILINE)[1:]
    assert [s.splitlines()[0] for s in sections] == list(RECIPES)
    for section in sections:
        paths = _named_paths(section)
        assert any(p.startswith("advisor/") for p in paths), section.splitlines()[0]
        assert any(p.startswith("tests/") for p in paths), section.splitlines()[0]


@pytest.mark.parametrize(
    "name", ["CONTRIBUTING.md", "README.md", *sorted(p.name for p in (ROOT / "docs").glob("*.md"))]
)
def test_every_path_a_newcomer_reads_exists(name: str) -> None:
    doc = ROOT / name if (ROOT / name).exists() else ROOT / "docs" / name
    text = doc.read_text(encoding="utf-8")
    # A bare file name is a top-level file or one of knowledge/'s (the docs name those by file).
    missing = [p for p in _named_paths(text) if not any((d / p).exists() for d in (ROOT, ROOT / "knowledge"))]
    missing += [
        link
        for link in LINK.findall(text)
        if "://" not in link and not (doc.parent / link).resolve().exists()
    ]
    assert not missing, f"{doc.relative_to(ROOT)} names what does not exist: {missing}"


def test_the_readme_stays_short() -> None:
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 200
