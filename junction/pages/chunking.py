"""HTML chunking on heading boundaries that loses no text: blocks packed into chunks.

``chunk_page`` reads the page's visible text as blocks (junction/pages/blocks.py: headings,
data tables, code blocks, paragraphs), joined by a blank line into the page text
(``ChunkedPage.text``), and packs them into chunks.

Chunks are contiguous runs of blocks (each chunk's text is ``page.text[start:end]``, so every
chunk is a byte-for-byte substring of the page text, and every text node lands in exactly
one chunk). Rules:

1. every heading starts a new chunk; a chunk's ``heading_path`` is its headings from the
   top, ``"A > B"`` (a heading closes every open heading of its level or deeper);
2. blocks join the current chunk while it stays within ``max_tokens``; a table or code block
   that does not fit starts a new chunk and is kept whole;
3. a block that alone exceeds ``max_tokens`` is cut (tables at row boundaries, code and
   paragraphs at line boundaries, then sentence, then word boundaries, and a single word
   still over the limit at character boundaries, the longest prefix that fits) into
   pieces of at most ``max_tokens``; each piece is its own chunk, marked by ``cut`` (the
   boundaries used, e.g. ``"rows"`` or ``"words,chars"``) and ``part``/``parts``;
4. a chunk under ``min_tokens`` is merged into the next chunk when the two fit within
   ``max_tokens``, else into the previous one, else kept as it is: nothing is dropped. A
   merged chunk's ``heading_path`` is the longest common prefix of the sections it covers
   (``sections`` lists them all).

The module only parses: admission of scored chunks is ``junction.pages.chunk_admission``
(``admit_chunks``). Token costs use ``junction.tokens.DEFAULT_TOKEN_COUNTER`` unless
another counter is given.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from junction.errors import JunctionError
from junction.pages.blocks import Block, page_blocks
from junction.text import SENTENCE_END, binary_offset
from junction.tokens import DEFAULT_TOKEN_COUNTER, TokenCounter

__all__ = [
    "DEFAULT_MAX_CHUNK_TOKENS",
    "DEFAULT_MIN_CHUNK_TOKENS",
    "HEADING_SEPARATOR",
    "Chunk",
    "ChunkedPage",
    "ChunkingError",
    "chunk_document",
    "chunk_html",
    "chunk_page",
    "heading_document",
]

DEFAULT_MAX_CHUNK_TOKENS = 400
"""Largest chunk (tokens): page admission's defaults (``junction.pages.admission``) admit 5
chunks within 2,048 tokens, and 5 × 400 <= 2,048, so five whole chunks always fit."""
DEFAULT_MIN_CHUNK_TOKENS = 8
"""Smallest chunk kept on its own (tokens): about one short sentence; shorter ones merge."""
HEADING_SEPARATOR = " > "
"""Between the headings of a heading path: ``"A > B"``."""

_WORD = re.compile(r"\S+")
_BLOCK_SEPARATOR = "\n\n"
# Cut boundaries of an over-long block, coarse to fine, per block kind.
_CUT_LEVELS = {"table": ("rows", "sentences", "words", "chars"),
               "code": ("lines", "words", "chars"),
               "text": ("lines", "sentences", "words", "chars"), "heading": ("words", "chars")}


class ChunkingError(JunctionError, ValueError):
    """A chunking or chunk-admission argument is invalid; the message names it and its value."""


@dataclass(frozen=True)
class Chunk:
    """One chunk of a page.

    - ``index``: 0-based position in the page (document order)
    - ``heading``: the last heading of ``heading_path`` ("" when none); ``level`` its HTML
      level 1-6 (0: none)
    - ``text``: the chunk's verbatim text, ``page.text[start:end]``
    - ``token_cost``: tokens of ``text`` (by the counter used to chunk)
    - ``heading_path``: the headings above the chunk, ``"A > B"`` ("" before any heading)
    - ``start``/``end``: character offsets of ``text`` in the page text
    - ``cut``: "" for whole blocks; for a piece of a block that alone exceeded the chunk
      limit, the boundaries it was cut at (``"rows"``, ``"lines"``, ``"sentences"``,
      ``"words"``, ``"chars"``, comma-joined), with ``part`` (1-based) of ``parts``
    - ``sections``: every heading path the chunk covers (more than one after a merge)
    """

    index: int
    heading: str
    level: int
    text: str
    token_cost: int
    heading_path: str = ""
    start: int = 0
    end: int = 0
    cut: str = ""
    part: int = 1
    parts: int = 1
    sections: tuple[str, ...] = ()


@dataclass(frozen=True)
class ChunkedPage:
    """A page's visible text (blocks joined by a blank line) and its chunks, in order."""

    text: str
    chunks: tuple[Chunk, ...]


def _trim(text: str, a: int, b: int) -> tuple[int, int]:
    """(a, b) shrunk to the first and last non-whitespace characters of ``text[a:b]``."""
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    return a, b


def _units(text: str, a: int, b: int, level: str) -> list[tuple[int, int]]:
    """Non-blank spans of ``text[a:b]`` at one boundary level (rows/lines, sentences, words);
    a line keeps its leading indentation, trailing whitespace is left between spans."""
    if level == "words":
        return [(a + m.start(), a + m.end()) for m in _WORD.finditer(text[a:b])]
    lines = level in ("rows", "lines")
    splitter = re.compile(r"\n") if lines else SENTENCE_END
    bounds, lo = [], a
    for m in splitter.finditer(text[a:b]):
        bounds.append((lo, a + m.start()))
        lo = a + m.end()
    bounds.append((lo, b))
    spans = []
    for x, y in bounds:
        tx, ty = _trim(text, x, y)
        if ty > tx:  # a line keeps its indentation (code); a sentence starts at its word
            spans.append((x if lines else tx, ty))
    return spans


class _Packer:
    """Greedy packing of spans of ``text`` into pieces of at most ``limit`` tokens."""

    def __init__(self, text: str, limit: int, counter: TokenCounter) -> None:
        self.text, self.limit, self.counter = text, limit, counter

    def cost(self, a: int, b: int) -> int:
        return self.counter.count(self.text[a:b])

    def _prefixes(self, a: int, b: int) -> list[tuple[int, int]]:
        """(a, b) as consecutive pieces, each the longest prefix of what is left that costs
        at most ``limit`` (binary search: the counter is monotone), at least one character."""
        pieces = []
        while a < b:
            lo, hi = a + 1, b
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if self.cost(a, mid) <= self.limit:
                    lo = mid
                else:
                    hi = mid - 1
            pieces.append((a, lo))
            a = lo
        return pieces

    def cut(self, a: int, b: int, levels: Sequence[str]) -> tuple[list[tuple[int, int]], str]:
        """Pieces of the over-long span (a, b), coarsest boundaries first, and the levels used."""
        used: list[str] = []
        units = [(a, b)]
        for level in levels:
            finer = []
            for x, y in units:
                if self.cost(x, y) > self.limit:
                    sub = (self._prefixes(x, y) if level == "chars"
                           else _units(self.text, x, y, level))
                    finer.extend(sub)
                    if len(sub) > 1 and level not in used:
                        used.append(level)
                else:
                    finer.append((x, y))
            units = finer
            if all(self.cost(x, y) <= self.limit for x, y in units):
                break
        pieces: list[tuple[int, int]] = []
        for x, y in units:
            if pieces and self.cost(pieces[-1][0], y) <= self.limit:
                pieces[-1] = (pieces[-1][0], y)
            else:
                pieces.append((x, y))
        return pieces, ",".join(used)


@dataclass
class _Span:
    """A chunk under construction: text span (a, b), blocks i0..i1, cut marks."""

    a: int
    b: int
    i0: int
    i1: int
    cut: str = ""
    part: int = 1
    parts: int = 1


def _check_limits(max_tokens: int, min_tokens: int) -> None:
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise ChunkingError(f"max_tokens must be an integer >= 1, got {max_tokens!r}")
    if isinstance(min_tokens, bool) or not isinstance(min_tokens, int) or min_tokens < 0:
        raise ChunkingError(f"min_tokens must be >= 0, got {min_tokens}")


def _pack(blocks: list[Block], spans: list[tuple[int, int]], packer: _Packer) -> list[_Span]:
    """Rules 1-3 of the module docstring: heading boundaries, greedy packing, cut blocks."""
    out: list[_Span] = []
    cur: _Span | None = None
    for i, (block, (a, b)) in enumerate(zip(blocks, spans, strict=True)):
        if cur is not None and (blocks[cur.i0].section != block.section
                                or packer.cost(cur.a, b) > packer.limit):
            out.append(cur)
            cur = None
        if packer.cost(a, b) > packer.limit:
            pieces, used = packer.cut(a, b, _CUT_LEVELS[block.kind])
            out.extend(_Span(x, y, i, i, used, k + 1, len(pieces))
                       for k, (x, y) in enumerate(pieces))
        elif cur is None:
            cur = _Span(a, b, i, i)
        else:
            cur.b, cur.i1 = b, i
    if cur is not None:
        out.append(cur)
    return out


def _merge_short(raw: list[_Span], packer: _Packer, min_tokens: int) -> list[_Span]:
    """Rule 4 of the module docstring: short chunks join a neighbour, none is dropped."""

    def fits(x: _Span, y: _Span) -> bool:
        return not x.cut and not y.cut and packer.cost(x.a, y.b) <= packer.limit

    def join(x: _Span, y: _Span) -> _Span:
        return _Span(x.a, y.b, x.i0, y.i1)

    out: list[_Span] = []
    pending: _Span | None = None
    for span in raw:
        if pending is not None:
            if fits(pending, span):
                span = join(pending, span)
            elif out and fits(out[-1], pending):
                out[-1] = join(out[-1], pending)
            else:
                out.append(pending)
            pending = None
        if not span.cut and packer.cost(span.a, span.b) < min_tokens:
            pending = span
            continue
        out.append(span)
    if pending is not None:
        if out and fits(out[-1], pending):
            out[-1] = join(out[-1], pending)
        else:
            out.append(pending)
    return out


def _heading_path(paths: Sequence[tuple[tuple[int, str], ...]]) -> tuple[tuple[int, str], ...]:
    """The longest common prefix of ``paths``."""
    common = list(paths[0])
    for path in paths[1:]:
        n = 0
        while n < min(len(common), len(path)) and common[n] == path[n]:
            n += 1
        del common[n:]
    return tuple(common)


def _render_path(path: Sequence[tuple[int, str]]) -> str:
    return HEADING_SEPARATOR.join(text for _, text in path)


def chunk_page(
    html: str,
    max_tokens: int = DEFAULT_MAX_CHUNK_TOKENS,
    min_tokens: int = DEFAULT_MIN_CHUNK_TOKENS,
    counter: TokenCounter = DEFAULT_TOKEN_COUNTER,
) -> ChunkedPage:
    """Chunk ``html`` (rules in the module docstring): the page text and its chunks.

    ``max_tokens`` (tokens, >= 1; default ``DEFAULT_MAX_CHUNK_TOKENS``) is the largest chunk
    (a word longer than it is cut at characters); ``min_tokens`` (tokens, >= 0; default
    ``DEFAULT_MIN_CHUNK_TOKENS``) the smallest chunk kept on its own. A page with no visible
    text gives no chunk. Deterministic: the same input gives the same chunks.
    Raises ``ChunkingError`` naming the argument for ``html`` that is not a string or holds
    binary content (``junction.text.binary_offset``: a NUL, or mostly control characters),
    ``max_tokens`` < 1 or ``min_tokens`` < 0.
    """
    if not isinstance(html, str):
        raise ChunkingError(f"html must be a string, got {type(html).__name__}")
    offset = binary_offset(html)
    if offset is not None:
        raise ChunkingError(f"html: binary content at byte {offset}; a page must be text")
    _check_limits(max_tokens, min_tokens)
    blocks = page_blocks(html)
    text = _BLOCK_SEPARATOR.join(b.text for b in blocks)
    spans, pos = [], 0
    for block in blocks:
        spans.append((pos, pos + len(block.text)))
        pos += len(block.text) + len(_BLOCK_SEPARATOR)
    packer = _Packer(text, max_tokens, counter)
    merged = _merge_short(_pack(blocks, spans, packer), packer, min_tokens)
    chunks = []
    for index, span in enumerate(merged):
        paths = list(dict.fromkeys(b.path for b in blocks[span.i0:span.i1 + 1]))
        path = _heading_path(paths)
        body = text[span.a:span.b]
        chunks.append(Chunk(
            index=index, heading=path[-1][1] if path else "", level=path[-1][0] if path else 0,
            text=body, token_cost=counter.count(body), heading_path=_render_path(path),
            start=span.a, end=span.b, cut=span.cut, part=span.part, parts=span.parts,
            sections=tuple(_render_path(p) for p in paths),
        ))
    return ChunkedPage(text=text, chunks=tuple(chunks))


def chunk_html(
    html: str,
    min_tokens: int = DEFAULT_MIN_CHUNK_TOKENS,
    counter: TokenCounter = DEFAULT_TOKEN_COUNTER,
    max_tokens: int = DEFAULT_MAX_CHUNK_TOKENS,
) -> list[Chunk]:
    """The chunks of ``chunk_page(html, max_tokens, min_tokens, counter)``, as a list."""
    return list(chunk_page(html, max_tokens, min_tokens, counter).chunks)


def heading_document(heading_path: str, text: str) -> str:
    """The text a judge reads for a chunk: its heading path on the first line (so a chunk
    cut from the middle of a section still says where it is), then its verbatim text."""
    return f"{heading_path}\n\n{text}" if heading_path else text


def chunk_document(chunk: Chunk) -> str:
    """``heading_document`` of ``chunk``."""
    return heading_document(chunk.heading_path, chunk.text)
