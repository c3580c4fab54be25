"""HTML chunking on heading boundaries, and verbatim admission of the best chunks.

``chunk_html`` parses HTML with BeautifulSoup (stdlib ``html.parser`` backend, so no
native parser is needed). Every ``h1``-``h6`` starts a new chunk; the text of paragraphs,
list items, table rows (cells joined by `` | ``), definition terms/descriptions,
block quotes and ``pre`` blocks joins the current chunk, one block per paragraph
(separated by a blank line). Text before the first heading forms a chunk with an empty
heading (level 0). Chunks whose body costs fewer than ``min_tokens`` tokens are dropped
(near-empty: a heading followed by nothing, a lone navigation link).

``select_top_chunks`` admits whole chunks verbatim, best score first, until the next one
would exceed the token budget. Token costs use ``junction.tokens.DEFAULT_TOKEN_COUNTER``
unless another counter is given.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from bs4 import BeautifulSoup, Tag

from junction.errors import JunctionError
from junction.tokens import DEFAULT_TOKEN_COUNTER, TokenCounter

__all__ = [
    "Chunk",
    "ScoredChunk",
    "AdmittedChunk",
    "ChunkingError",
    "chunk_html",
    "select_top_chunks",
]

_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
_BLOCKS = ("p", "li", "tr", "pre", "blockquote", "dt", "dd", "figcaption", "caption")
_DROP = ("script", "style", "noscript", "template", "head")
_SPACE = re.compile(r"\s+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


class ChunkingError(JunctionError, ValueError):
    """A chunking or chunk-admission argument is invalid; the message names it and its value."""


@dataclass(frozen=True)
class Chunk:
    """One heading-delimited chunk.

    - ``index``: 0-based position in the document
    - ``heading``: the heading text ("" before the first heading); ``level`` 1-6 (0: none)
    - ``text``: the heading line then the body paragraphs, separated by blank lines
    - ``token_cost``: tokens of ``text`` (by the counter used to chunk)
    """

    index: int
    heading: str
    level: int
    text: str
    token_cost: int


@dataclass(frozen=True)
class ScoredChunk:
    """A chunk with its judge score (logits; comparable only within one query)."""

    chunk: Chunk
    score: float


@dataclass(frozen=True)
class AdmittedChunk:
    """A chunk admitted into the budget: its verbatim ``text`` (cut only when ``truncated``)."""

    chunk: Chunk
    score: float
    text: str
    token_cost: int
    truncated: bool = False


def _clean(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def _block_text(tag: Tag) -> str:
    if tag.name == "tr":
        cells = [_clean(c.get_text(" ")) for c in tag.find_all(["td", "th"])]
        return " | ".join(c for c in cells if c)
    if tag.name == "pre":
        return tag.get_text().strip("\n")
    return _clean(tag.get_text(" "))


def chunk_html(
    html: str, min_tokens: int = 8, counter: TokenCounter = DEFAULT_TOKEN_COUNTER
) -> list[Chunk]:
    """Split ``html`` into heading-delimited chunks (rules in the module docstring).

    ``min_tokens`` (tokens, >= 0; default 8, about one short sentence) is the smallest body a
    chunk may keep. Nested blocks (a ``p`` inside an ``li``) are read once, by the outermost
    block. Returns chunks in document order, re-indexed from 0 after dropping.
    Raises ``ChunkingError`` if ``min_tokens`` < 0.
    """
    if min_tokens < 0:
        raise ChunkingError(f"min_tokens must be >= 0, got {min_tokens}")
    soup = BeautifulSoup(html, "html.parser")
    for tag in soup.find_all(_DROP):
        tag.decompose()
    sections: list[tuple[str, int, list[str]]] = [("", 0, [])]
    for tag in soup.find_all([*_HEADINGS, *_BLOCKS]):
        if tag.name in _HEADINGS:
            sections.append((_clean(tag.get_text(" ")), int(tag.name[1]), []))
            continue
        if tag.find_parent(_BLOCKS) is not None:
            continue  # read by its outermost block
        text = _block_text(tag)
        if text:
            sections[-1][2].append(text)
    chunks: list[Chunk] = []
    for heading, level, body in sections:
        body_text = "\n\n".join(body)
        if counter.count(body_text) < min_tokens:
            continue
        text = f"{heading}\n\n{body_text}" if heading else body_text
        chunks.append(Chunk(len(chunks), heading, level, text, counter.count(text)))
    return chunks


def _cut(text: str, budget: int, counter: TokenCounter) -> str:
    """The longest prefix of ``text`` within ``budget`` tokens, cut at a paragraph boundary,
    else a sentence boundary, else a word boundary (the last resort for one huge sentence)."""
    for pieces, joiner in (
        (text.split("\n\n"), "\n\n"),
        (_SENTENCE_END.split(text), " "),
        (text.split(), " "),
    ):
        kept: list[str] = []
        for piece in pieces:
            candidate = joiner.join([*kept, piece])
            if counter.count(candidate) > budget:
                break
            kept.append(piece)
        if kept:
            return joiner.join(kept)
    return ""


def select_top_chunks(
    scored: Sequence[ScoredChunk],
    top_k: int = 5,
    token_budget: int = 2048,
    counter: TokenCounter = DEFAULT_TOKEN_COUNTER,
) -> list[AdmittedChunk]:
    """Admit at most ``top_k`` whole chunks, best score first, within ``token_budget`` tokens.

    Order: score descending, then chunk index ascending (stable, documented tie rule).
    Admission stops at the first chunk that would take the total over the budget (a worse
    chunk never jumps a better one). Exception: when the *best* chunk alone exceeds the
    budget, it is cut (``_cut``: paragraph, then sentence, then word boundary) and returned
    with ``truncated=True``. Defaults (5 chunks, 2048 tokens) come from the judge issue.
    Raises ``ChunkingError`` if ``top_k`` < 0 or ``token_budget`` < 0.
    """
    if top_k < 0:
        raise ChunkingError(f"top_k must be >= 0, got {top_k}")
    if token_budget < 0:
        raise ChunkingError(f"token_budget must be >= 0, got {token_budget}")
    order = sorted(scored, key=lambda s: (-s.score, s.chunk.index))[:top_k]
    admitted: list[AdmittedChunk] = []
    used = 0
    for item in order:
        cost = counter.count(item.chunk.text)
        if used + cost <= token_budget:
            admitted.append(AdmittedChunk(item.chunk, item.score, item.chunk.text, cost))
            used += cost
            continue
        if not admitted:
            text = _cut(item.chunk.text, token_budget, counter)
            if text:
                admitted.append(AdmittedChunk(item.chunk, item.score, text,
                                              counter.count(text), truncated=True))
        break
    return admitted
