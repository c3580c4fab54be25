"""A page's visible text as blocks: headings, data tables, code blocks and paragraphs, in
document order (``page_blocks``), the input of the chunker (junction/pages/chunking.py).

``page_blocks`` parses HTML with BeautifulSoup (stdlib ``html.parser`` backend, so no native
parser is needed) and walks it in document order (an explicit stack: no recursion limit on
deep pages). The page's visible text (every text node outside ``script``, ``style``,
``noscript``, ``template`` and ``head``; comments and doctypes are not text) becomes a list
of blocks (the chunker joins them by a blank line into the page text, ``ChunkedPage.text``):

- a heading (``h1``-``h6``): its text, one line;
- a data table (a ``table`` with no nested table or block element): one line per row, cells
  joined by `` | ``, caption and stray text as lines of their own;
- a code block (``pre``): its text as is (newlines and indentation kept);
- a paragraph: the text of a run of inline content between block boundaries (``p``,
  ``li``, ``div``, ``td``, ``dt``, ``dd``, ``body``, ...), so text before the first heading,
  text directly inside a bare ``div`` and text in layout tables are paragraphs too;
  whitespace collapses to one space, ``<br>`` is a line break.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bs4 import BeautifulSoup, Tag
from bs4.element import (
    Comment,
    Declaration,
    Doctype,
    NavigableString,
    ProcessingInstruction,
    Script,
    Stylesheet,
    TemplateString,
)

__all__ = ["Block", "page_blocks"]

_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
_DROP = ("script", "style", "noscript", "template", "head")
_HIDDEN = (Comment, Declaration, Doctype, ProcessingInstruction, Script, Stylesheet,
           TemplateString)
# Block-level elements (HTML Living Standard's "flow" containers): each bounds a paragraph.
_CONTAINERS = frozenset((
    "[document]", "html", "body", "address", "article", "aside", "blockquote", "caption",
    "center", "dd", "details", "dialog", "dir", "div", "dl", "dt", "fieldset", "figcaption",
    "figure", "footer", "form", "header", "hgroup", "hr", "legend", "li", "main", "menu",
    "nav", "ol", "optgroup", "option", "p", "section", "summary", "table", "tbody", "td",
    "tfoot", "th", "thead", "tr", "ul",
))
# Anything of these inside a table makes it a layout table (read as paragraphs, not rows).
_LAYOUT = ("table", "p", "div", "ul", "ol", "dl", "pre", "blockquote", "section", "article",
           "li", *_HEADINGS)
_SPACE = re.compile(r"\s+")
_BR = object()  # a <br> in an inline run
_FLUSH = object()  # the end of a block container


@dataclass(frozen=True)
class Block:
    """One block of a page: ``kind`` heading | table | code | text, its ``text``, the
    headings above it (``path``: (level, heading text) from the top) and the index of the
    heading ``section`` it belongs to."""

    kind: str  # heading | table | code | text
    text: str
    path: tuple[tuple[int, str], ...]  # (level, heading text) from the top
    section: int  # index of the heading section the block belongs to


def _clean(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def _visible(node: object) -> bool:
    return isinstance(node, NavigableString) and not isinstance(node, _HIDDEN)


def _inline_text(tag: Tag) -> str:
    """Every visible string under ``tag`` in order, ``<br>`` as a space, whitespace collapsed."""
    parts = []
    for node in tag.descendants:
        if isinstance(node, Tag) and node.name == "br":
            parts.append(" ")
        elif _visible(node):
            parts.append(str(node))
    return _clean("".join(parts))


def _paragraph(pieces: list) -> str:
    """An inline run's text: ``<br>`` starts a line; each line collapsed; blank lines gone."""
    text = "".join("\n" if p is _BR else _SPACE.sub(" ", p) for p in pieces)
    return "\n".join(line for line in (_clean(x) for x in text.split("\n")) if line)


def _is_data_table(table: Tag) -> bool:
    return table.find(_LAYOUT) is None


def _table_lines(table: Tag) -> list[str]:
    """A data table's lines: one per row (cells joined by " | "), captions and stray text."""
    lines: list[str] = []
    stack: list = list(reversed(list(table.children)))
    while stack:
        node = stack.pop()
        if _visible(node):
            text = _clean(str(node))
        elif not isinstance(node, Tag):
            continue
        elif node.name == "tr":
            cells = []
            for cell in node.children:
                cell_text = (_inline_text(cell) if isinstance(cell, Tag)
                             else _clean(str(cell)) if _visible(cell) else "")
                if cell_text:
                    cells.append(cell_text)
            text = " | ".join(cells)
        elif node.name in ("thead", "tbody", "tfoot"):
            stack.extend(reversed(list(node.children)))
            continue
        else:
            text = _inline_text(node)
        if text:
            lines.append(text)
    return lines


def _blocks(soup: BeautifulSoup) -> list[Block]:
    """The page's blocks in document order (module docstring)."""
    blocks: list[Block] = []
    pieces: list = []
    path: list[tuple[int, str]] = []
    section = 0

    def add(kind: str, text: str) -> None:
        blocks.append(Block(kind, text, tuple(path), section))

    def flush() -> None:
        text = _paragraph(pieces)
        pieces.clear()
        if text:
            add("text", text)

    stack: list = [soup]
    while stack:
        node = stack.pop()
        if node is _FLUSH:
            flush()
        elif not isinstance(node, Tag):
            if _visible(node):
                pieces.append(str(node))
        elif node.name in _DROP:
            continue
        elif node.name == "br":
            pieces.append(_BR)
        elif node.name in _HEADINGS:
            flush()
            text = _inline_text(node)
            if text:
                level = int(node.name[1])
                while path and path[-1][0] >= level:
                    path.pop()
                path.append((level, text))
                section += 1
                add("heading", text)
        elif node.name == "pre":
            flush()
            text = node.get_text().strip("\n")
            if text.strip():
                add("code", text)
        elif node.name == "table" and _is_data_table(node):
            flush()
            lines = _table_lines(node)
            if lines:
                add("table", "\n".join(lines))
        elif node.name in _CONTAINERS:
            flush()
            stack.append(_FLUSH)
            stack.extend(reversed(list(node.children)))
        else:  # inline element: its strings join the current paragraph
            stack.extend(reversed(list(node.children)))
    flush()
    return blocks


def page_blocks(html: str) -> list[Block]:
    """The blocks of ``html`` in document order (module docstring); ``html`` is a string
    (``chunking.chunk_page`` checks it)."""
    soup = BeautifulSoup(html, "html.parser")
    for tag in soup.find_all(_DROP):
        tag.decompose()
    return _blocks(soup)
