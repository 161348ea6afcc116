"""Fails when advisor/ or tui/ defines a function, method, class or import nothing uses (vulture).

Uses are read from the whole checkout (advisor, tui, tests, scripts, benchmarks), so a function only a test or
a benchmark calls is not dead; only definitions in advisor/ and tui/ are reported. Framework hooks are called
by name from outside the code (Textual's compose/on_*/action_*/watch_*, textual-serve's handlers): WHITELIST.
"""

from __future__ import annotations

import sys
from pathlib import Path

from vulture import Vulture

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("advisor", "tui", "tests", "scripts", "benchmarks")
REPORTED = ("advisor", "tui")
KINDS = ("function", "method", "class", "property", "import")
# Called by name by a framework: Textual (compose, mount and message handlers, actions, watchers, render
# hooks), pytest, pydantic validators, module __getattr__, and the overrides of textual-serve's Server and
# Textual's Footer that tui/serve_web.py and tui/widgets/footer.py replace.
WHITELIST = [
    "compose",
    "on_*",
    "_on_*",
    "action_*",
    "watch_*",
    "validate_*",
    "check_action",
    "render",
    "render_line",
    "get_content_*",
    "key_*",
    "__getattr__",
    "test_*",
    "pytest_*",
    "handle_index",
    "handle_websocket",
    "_open_app_process",
    "bindings_changed",
]
DECORATORS = ["@on", "@work", "@pytest.fixture", "@field_validator", "@model_validator"]


def main() -> int:
    v = Vulture(ignore_names=WHITELIST, ignore_decorators=DECORATORS)
    v.scavenge([str(ROOT / p) for p in SCANNED])
    dead = [
        item
        for item in v.get_unused_code(min_confidence=60)
        if item.typ in KINDS and Path(item.filename).resolve().relative_to(ROOT).parts[0] in REPORTED
    ]
    for item in dead:
        where = Path(item.filename).resolve().relative_to(ROOT)
        print(f"{where}:{item.first_lineno}: unused {item.typ} {item.name!r}")
    if dead:
        print(f"{len(dead)} unused definitions: delete them, or whitelist a framework hook in {__file__}")
    return 1 if dead else 0


if __name__ == "__main__":
    sys.exit(main())
