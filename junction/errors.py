"""Typed errors raised by Junction.

Every error names the file, field or id involved, so a user can act on the message alone.
"""

from __future__ import annotations

__all__ = [
    "DatasetError",
    "JunctionError",
    "SelectionError",
    "TraceError",
    "UnknownNameError",
]


class JunctionError(Exception):
    """Base class of every error Junction raises on purpose."""


class SelectionError(JunctionError):
    """A selector was given a problem it cannot solve as stated (for example duplicate ids)."""


class UnknownNameError(JunctionError, KeyError):
    """A suite, strategy, run or other registry name is unknown; the message lists the valid
    ones."""

    def __str__(self) -> str:  # KeyError quotes its message; we want it plain.
        return str(self.args[0]) if self.args else ""


class TraceError(JunctionError):
    """A trace record breaks an invariant or a trace file cannot be read."""


class DatasetError(JunctionError):
    """A suite or data file is malformed; the message names the file, row or field."""
