"""Text in any script: which characters are words of their own, and lexical tokens.

Chinese, Japanese and Thai are written without spaces between words, so a ``\\w+`` run of
them is a whole clause, not a word. Here every character of those scripts (Han,
Hiragana, Katakana, Hangul, Thai; Korean too, where one syllable block often is a
morpheme) is a token of its own: the standard character-unigram baseline for CJK
retrieval (Kwok 1997, "Comparing representations in Chinese information retrieval";
Lucene's ``CJKAnalyzer`` uses bigrams of the same characters). Both the BM25 lanes
(``junction.candidates``) and the token counter (``junction.tokens``) read the ranges here.
"""

from __future__ import annotations

import functools
import re
import unicodedata

__all__ = ["CJK_CHARS", "SENTENCE_END", "THAI_CHARS", "binary_offset", "lexical_tokens",
           "names_id"]

CJK_CHARS = ("\u1100-\u11ff"  # Hangul Jamo
             "\u3040-\u309f"  # Hiragana
             "\u30a0-\u30ff"  # Katakana
             "\u3130-\u318f"  # Hangul Compatibility Jamo
             "\u3400-\u4dbf"  # CJK Unified Ideographs Extension A
             "\u4e00-\u9fff"  # CJK Unified Ideographs
             "\uac00-\ud7af"  # Hangul Syllables
             "\uf900-\ufaff")  # CJK Compatibility Ideographs
"""Character-class ranges (inside ``[...]``) of the CJK scripts."""

THAI_CHARS = "\u0e00-\u0e7f"
"""Character-class range of the Thai block (consonants, vowels, tone marks, digits)."""

SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
"""The whitespace after a sentence's ``.``, ``!`` or ``?``: where text splits into sentences
(page chunking and the admission rule's cut, ``junction.pages``)."""

_THAI_MARKS = "\u0e31\u0e34-\u0e3a\u0e47-\u0e4e"  # vowels and tone marks above/below

_LEXICAL = re.compile(
    rf"[{CJK_CHARS}]"  # one CJK character
    rf"|[{THAI_CHARS}][{_THAI_MARKS}]*"  # one Thai character with its combining marks
    rf"|[^\W{CJK_CHARS}{THAI_CHARS}]+"  # a run of other word characters
)
_SPACED_MIN = 1
"""Shortest token kept from space-separated scripts: one character, so a one-letter name
("R", the "x" and "y" of a plot tool) is a term (bm25s's ``\\w\\w+`` default drops them;
of English one-letter words only "a" is a stopword)."""
_SCRIPT_CHAR = re.compile(rf"[{CJK_CHARS}{THAI_CHARS}]")


def lexical_tokens(text: str) -> list[str]:
    """The BM25 tokens of ``text``, in order.

    NFKC-normalised (full-width letters and digits become ASCII) and lower-cased; every
    CJK or Thai character is one token; runs of other word characters are tokens, one
    character long included, unless an English stopword (bm25s's ``stopwords="en"`` list,
    as ``bm25s.tokenize`` uses; its ``\\w\\w+`` pattern would drop one-letter tokens).
    """
    stopwords = _stopwords()
    return [tok for tok in _LEXICAL.findall(unicodedata.normalize("NFKC", text).lower())
            if _SCRIPT_CHAR.match(tok) or (len(tok) >= _SPACED_MIN and tok not in stopwords)]


@functools.cache
def _stopwords() -> frozenset[str]:
    """bm25s's English stopwords, imported on first use (bm25s imports scipy: seconds on a
    busy machine, which a command that never tokenises should not pay)."""
    from bm25s.stopwords import STOPWORDS_EN

    return frozenset(STOPWORDS_EN)


_CONTROL = re.compile("[\x00-\x08\x0e-\x1f\x7f-\x9f]")
"""Control characters that text does not hold: C0 but tab, newline, vertical tab, form
feed and carriage return; DEL; C1."""
BINARY_CONTROL_SHARE = 0.5
"""Above this share of control characters among the non-whitespace characters, a text is
binary ("mostly control characters"); ANSI colour codes in a log stay well below it."""


def binary_offset(text: str) -> int | None:
    """Where ``text`` shows it is not text: the UTF-8 byte offset of its first NUL, or, when
    control characters (``_CONTROL``) are more than ``BINARY_CONTROL_SHARE`` of its
    non-whitespace characters, of its first control character; None for text.
    """
    nul = text.find("\0")
    if nul >= 0:
        return len(text[:nul].encode("utf-8", "surrogatepass"))
    first = _CONTROL.search(text)
    if first is None:
        return None
    controls = len(_CONTROL.findall(text))
    visible = sum(not ch.isspace() for ch in text)
    if controls > BINARY_CONTROL_SHARE * visible:
        return len(text[:first.start()].encode("utf-8", "surrogatepass"))
    return None


_IDENTIFIER = re.compile(r"[A-Za-z0-9_]+")


@functools.lru_cache(maxsize=16384)
def _identifiers(text: str) -> frozenset[str]:
    """The maximal runs of ``[A-Za-z0-9_]`` in ``text``."""
    return frozenset(_IDENTIFIER.findall(text))


def names_id(text: str, resource_id: str) -> bool:
    """Whether ``text`` names ``resource_id`` verbatim as a whole identifier: not preceded
    or followed by a letter, digit or ``_`` (``tau2_banking.names_tool``'s rule). An id made
    of those characters only is looked up among the text's maximal runs of them (the
    same answer as the regular expression, without one search per pair)."""
    if _IDENTIFIER.fullmatch(resource_id):
        return resource_id in _identifiers(text)
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(resource_id)}(?![A-Za-z0-9_])",
                     text) is not None
