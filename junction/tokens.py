"""Token counting: one protocol for every token cost in Junction.

The default counter needs no model file. It approximates the byte-level BPE tokenizer of
the default model, Qwen2.5 (151k-entry vocabulary; the embedded
Qwen2.5-Coder-0.5B-Instruct, ``junction.models``), measured per script against the
tokenizer itself by ``bench/studies/token_prices.py`` on the fixed sample
``bench/data/token_scripts.json``, which the rates below were fitted on
(``tests/test_text.py`` holds every script's total within 25%).

On text it was not fitted on the bound is wider (``bench/data/token_heldout.json``: 17
languages, ``bench/studies/token_prices.py --held-out``; ``tests/test_text.py`` holds both): a
language written in a script priced apart is counted at 0.7–1.3 of its real total
(Ukrainian and Serbian about 0.74, Thai 1.17), and a single sentence of any language at
0.4–1.5 of its real count. Single Ukrainian sentences come out at 0.67–0.84, and Latin-script
languages other than English lowest (the Latin rate is English's: Turkish 0.52, Polish
0.60, German 0.71 of the real total). A budget of such text holds that much more than
its price says.
Text is split into runs of one script, runs of digits and runs of punctuation
(whitespace is free), and each run costs ceil(rate · characters), with the rate per
character:

- Latin and every other script not listed (word characters): 1/8: a large vocabulary holds
  most English words, and JSON keys, whole;
- Cyrillic 1/3, Arabic 2/5, Hebrew 1/3: about 2.2–2.6 characters a token;
- Greek 1 and Devanagari 1: Qwen2.5's vocabulary holds few of their letter pairs, so about
  one token a character (a Devanagari vowel sign, a combining mark, counts as one);
- CJK (``junction.text.CJK_CHARS``) 3/5 and Thai (``junction.text.THAI_CHARS``) 3/5;
- digits 1: Qwen2's pre-tokenizer splits every number into single digits;
- punctuation 1/4: JSON's ``":{"`` and the like merge into few tokens.

It is deterministic and monotone: appending text never lowers the count (each run's cost
grows with its length, and a new run adds).
"""

from __future__ import annotations

import json
import re
from fractions import Fraction
from typing import Any, Protocol, cast, runtime_checkable

from junction.text import CJK_CHARS, THAI_CHARS

__all__ = [
    "DEFAULT_TOKEN_COUNTER",
    "SCRIPT_RANGES",
    "ApproxTokenCounter",
    "TokenCounter",
    "render_tool_schema",
]

SCRIPT_RANGES: dict[str, str] = {
    "cjk": CJK_CHARS,
    "thai": THAI_CHARS,
    "devanagari": "\u0900-\u097f",
    "greek": "\u0370-\u03ff\u1f00-\u1fff",
    "cyrillic": "\u0400-\u052f",
    "arabic": "\u0600-\u06ff\u0750-\u077f\u08a0-\u08ff",
    "hebrew": "\u0590-\u05ff",
}
"""Character-class ranges (inside ``[...]``) of the scripts priced apart (Unicode blocks);
everything else that is a word character is priced as Latin."""

# Tokens per character of each run kind (exact fractions: no float rounding in ceil).
_RATES: dict[str, Fraction] = {
    "cjk": Fraction(3, 5), "thai": Fraction(3, 5), "devanagari": Fraction(1),
    "greek": Fraction(1), "cyrillic": Fraction(1, 3), "arabic": Fraction(2, 5),
    "hebrew": Fraction(1, 3), "digits": Fraction(1), "word": Fraction(1, 8),
    "punct": Fraction(1, 4),
}
_RATIOS: dict[str, tuple[int, int]] = {k: (r.numerator, r.denominator) for k, r in _RATES.items()}
_COUNTED: dict[str, int] = {}
"""Texts counted in this process -> tokens (``ApproxTokenCounter.count``), up to
``_COUNTED_MAX`` texts."""
_COUNTED_MAX = 200_000
_ALL_SCRIPTS = "".join(SCRIPT_RANGES.values())
_RUN = re.compile("|".join(
    [f"(?P<{name}>[{chars}]+)" for name, chars in SCRIPT_RANGES.items()]
    + ["(?P<digits>[0-9]+)", f"(?P<word>[^\\W0-9{_ALL_SCRIPTS}]+)",
       f"(?P<punct>[^\\w\\s{_ALL_SCRIPTS}]+)"]))


@runtime_checkable
class TokenCounter(Protocol):
    """Anything that prices a text in tokens (an int >= 0)."""

    name: str

    def count(self, text: str) -> int:
        """Return the number of tokens ``text`` occupies in the visible context."""
        ...


class ApproxTokenCounter:
    """Deterministic default counter (no model file); see the module docstring for the rule."""

    name = "approx-qwen2.5"

    def count(self, text: str) -> int:
        """Tokens of ``text``: each run costs ceil(rate · length), rates per script above.
        The same text is counted once per process (``_COUNTED``: a tool's schema recurs in
        many tasks' pools)."""
        cached = _COUNTED.get(text)
        if cached is not None:
            return cached
        tokens = 0
        for m in _RUN.finditer(text):
            # every alternative of ``_RUN`` is a named group: a match always has ``lastgroup``
            p, q = _RATIOS[cast(str, m.lastgroup)]
            tokens += -(-(m.end() - m.start()) * p // q)  # ceil(n · p / q) in integers
        if len(_COUNTED) < _COUNTED_MAX:
            _COUNTED[text] = tokens
        return tokens


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
