"""Provides FLAG: a pattern matching any gpu-advisor command-line flag, for tests that the UI and the core's
answers never name one."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator

from advisor.cli.main import build_parser
from advisor.question.fields import FIELDS


def _parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _parsers(sub)


def flag_pattern() -> re.Pattern[str]:
    """Every flag of every command (and of the registry), as a whole word: '--recompute' matches, Megatron's
    '--recompute-granularity' in a launch command does not."""
    flags = {f.flag for f in FIELDS.values()}
    for parser in _parsers(build_parser()):
        flags |= {o for a in parser._actions for o in a.option_strings if o.startswith("--")}
    flags -= {"--help", "--version"}
    words = "|".join(sorted(map(re.escape, flags), key=len, reverse=True))
    return re.compile(rf"(?<![\w-])({words})(?![\w-])")


FLAG = flag_pattern()
