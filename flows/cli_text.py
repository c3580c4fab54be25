"""Text at the command line's edges: arguments checked on the way in, escaped on the way out.

- ``require_text``: a query (or any text argument the command cannot do without) that is
  empty or whitespace only is refused with one line naming the argument;
- ``require_text_content``: an argument or file holding binary content (a NUL byte, or
  mostly control characters: ``junction.text.binary_offset``) is refused with one line
  naming it and the byte;
- ``terminal_safe``: what goes to a terminal has its control characters (C0 but tab and
  newline, DEL, C1) and bidirectional overrides written as ``\\xNN`` / ``\\uNNNN`` escapes,
  so a page or a document can neither move the cursor, recolour the terminal nor reorder
  what is shown (the ESC sequences of ECMA-48; the bidi overrides of Unicode UAX #9);
- ``json_text``: ``json.dumps`` with non-ASCII kept but the same characters escaped
  (JSON escapes C0 itself; C1 and the overrides are escaped here, still valid JSON).
"""

from __future__ import annotations

import json
import re
from typing import Any

import typer

from junction.errors import JunctionError
from junction.text import binary_offset

__all__ = ["echo", "json_text", "require_text", "require_text_content", "terminal_safe"]

_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def require_text(value: str, name: str) -> str:
    """``value`` unless it is empty or whitespace only (``JunctionError``: "NAME must not
    be empty")."""
    if not value.strip():
        raise JunctionError(f"{name} must not be empty")
    return value


def require_text_content(value: str, name: str) -> str:
    """``value`` unless it holds binary content (``JunctionError``: "NAME: binary content
    at byte N", N the UTF-8 byte offset ``junction.text.binary_offset`` gives)."""
    offset = binary_offset(value)
    if offset is not None:
        raise JunctionError(f"{name}: binary content at byte {offset}; expected text")
    return value


def _escape(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_safe(text: str) -> str:
    """``text`` with every control character but tab and newline, and every bidi override,
    escaped (``\\x1b``, ``\\u202e``); everything else unchanged."""
    return _UNSAFE.sub(_escape, text)


def json_text(payload: Any) -> str:
    """``payload`` as one line of JSON (sorted keys, non-ASCII kept), with C1 controls and
    bidi overrides escaped as ``\\uNNNN`` (C0 and DEL as JSON escapes them)."""
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False)
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def echo(text: str, err: bool = False) -> None:
    """``typer.echo`` of ``terminal_safe(text)`` (standard error with ``err``)."""
    typer.echo(terminal_safe(text), err=err)
