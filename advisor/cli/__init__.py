"""Provides the gpu-advisor command line (argparse only at import: heavy modules load per command)."""

import os
import sys

# Not typing's: the handler below is installed before anything this module need not import (mypy reads any
# TYPE_CHECKING as true).
TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal
else:
    try:
        # The C module under `signal`: the same handlers, without building signal's enums at import (a few
        # ms of every command's start-up).
        import _signal as signal
    except ImportError:  # an interpreter without it
        import signal


def interrupted_while_starting(signum: int, frame: object) -> None:
    """The one Ctrl-C handler of start-up: before main() runs (the CLI's own imports take tens of
    milliseconds), one line and exit 130 at once, as main() says it, never a traceback from an import."""
    os.write(2, b"\ngpu-advisor: interrupted\n")
    os._exit(130)


# Only when this process IS the command (the console script, or `python -m advisor.cli.main`): a program that
# imports the CLI as a library keeps its own Ctrl-C. main() puts Python's handler back when it starts, and
# from there its KeyboardInterrupt branch says the same line.
AS_COMMAND = os.path.basename(sys.argv[0]) in ("gpu-advisor", "-m") and (
    signal.getsignal(signal.SIGINT) is signal.default_int_handler
)
if AS_COMMAND:
    signal.signal(signal.SIGINT, interrupted_while_starting)
