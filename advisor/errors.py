"""Provides the error types the core raises and the CLI maps to exit codes."""

from __future__ import annotations


class AdvisorError(Exception):
    """Base class of the errors gpu-advisor reports without a traceback."""


class InputError(AdvisorError, ValueError):
    """A value the user gave is not accepted (CLI exit 2).

    The message is one line that names the bad value and what is accepted.
    """


class KnowledgeError(AdvisorError):
    """A knowledge file is malformed: the message names the file and the field."""
