"""Token counting: one protocol for every token cost in Junction.

The default counter needs no model file. It approximates a sub-word (BPE-style) tokenizer:
text is split into words, numbers and single punctuation marks (regex ``\\w+|[^\\w\\s]``),
and each word costs ``ceil(len(word) / 4)`` tokens, since English BPE vocabularies average
about four characters per token (OpenAI, "What are tokens and how to count them").
It is deterministic and monotone: appending text never lowers the count.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Protocol, runtime_checkable

__all__ = ["TokenCounter", "ApproxTokenCounter", "DEFAULT_TOKEN_COUNTER", "render_tool_schema"]

_PIECE = re.compile(r"\w+|[^\w\s]", re.UNICODE)
_CHARS_PER_TOKEN = 4


@runtime_checkable
class TokenCounter(Protocol):
    """Anything that prices a text in tokens (an int >= 0)."""

    name: str

    def count(self, text: str) -> int:
        """Return the number of tokens ``text`` occupies in the visible context."""
        ...


class ApproxTokenCounter:
    """Deterministic default counter (no model file); see the module docstring for the rule."""

    name = "approx-bpe-4"

    def count(self, text: str) -> int:
        """Tokens of ``text``: each word costs ceil(len/4), each punctuation mark 1."""
        return sum(math.ceil(len(piece) / _CHARS_PER_TOKEN) for piece in _PIECE.findall(text))


DEFAULT_TOKEN_COUNTER: TokenCounter = ApproxTokenCounter()


def render_tool_schema(name: str, description: str, parameters: dict[str, Any]) -> str:
    """The JSON text a tool occupies in the visible context.

    Rendered as ``{"name", "description", "parameters"}`` with sorted keys and compact
    separators, the shape function-calling APIs put in the prompt, so a bigger schema
    costs more tokens.
    """
    return json.dumps(
        {"name": name, "description": description, "parameters": parameters},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
