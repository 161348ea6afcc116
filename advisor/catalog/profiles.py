"""Provides the names of the user's calibration profiles (`<data dir>/profiles/<NAME>/`) and which hold runs:
what every answer asks, without the stored runs' record types (advisor/catalog/run_store.py reads those)."""

from __future__ import annotations

import re
from pathlib import Path

from advisor.catalog.userdata import data_dir
from advisor.question.checks import shown
from advisor.question.errors import InputError

RUNS_FILE = "runs.json"
_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")


def check_profile_name(name: str) -> str:
    """name when it is a profile name (lowercase letters, digits, '.', '_', '-'; 64 at most)."""
    if not isinstance(name, str) or not _NAME.fullmatch(name) or ".." in name:
        raise InputError(
            f"profile: {shown(name)} is not a profile name; accepted lowercase letters, digits, '.', '_' "
            "and '-', starting with a letter or digit, at most 64 characters (e.g. h100-sxm-torchtitan)",
            field="profile",
            value=name,
            problem="is not a profile name",
            accepted="lowercase letters, digits, '.', '_' and '-', at most 64 characters",
        )
    return name


def default_profile(gpu: str, key: str) -> str:
    """The profile a run goes to, and an answer reads, when none is named: one per GPU type and stack or
    engine."""
    return f"{gpu}-{key}".lower()


def profiles_dir() -> Path:
    """Where the named profiles live."""
    return data_dir() / "profiles"


def list_profiles() -> list[str]:
    """The profiles that hold calibration runs."""
    root = profiles_dir()
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if _NAME.fullmatch(p.name) and (p / RUNS_FILE).is_file())
