"""Provides the gpu-advisor command line (argparse only at import: heavy modules load per command)."""

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import signal
else:
    try:
        # The C module under `signal`: the same handlers, without building signal's enums at import (a few
        # ms of every command's start-up).
        import _signal as signal
    except ImportError:  # an interpreter without it
        import signal


def _interrupted_while_starting(signum: int, frame: object) -> None:
    # Ctrl-C before main() runs (the CLI's own imports take tens of milliseconds): exit 130 at once, quietly,
    # as main() would, instead of a KeyboardInterrupt traceback from the middle of an import.
    raise SystemExit(130)


# Only when this process IS the command (the console script, or `python -m advisor.cli.main`): a program that
# imports the CLI as a library keeps its own Ctrl-C. main() puts Python's handler back when it starts.
AS_COMMAND = os.path.basename(sys.argv[0]) in ("gpu-advisor", "-m") and (
    signal.getsignal(signal.SIGINT) is signal.default_int_handler
)
if AS_COMMAND:
    signal.signal(signal.SIGINT, _interrupted_while_starting)
