"""HTML chunking that loses no text, and verbatim chunk admission (no model needed)."""

from __future__ import annotations

import math
import re

import pytest
from bs4 import BeautifulSoup
from hypothesis import given, settings
from hypothesis import strategies as st

from junction.budget import Budget
from junction.pages.admission import ScoredResource, admit_top_k
from junction.pages.chunk_admission import ScoredChunk, admit_chunks
from junction.pages.chunking import (
    Chunk,
    ChunkingError,
    chunk_document,
    chunk_html,
    chunk_page,
)
from junction.resources import ContextResource, ToolResource
from junction.tokens import DEFAULT_TOKEN_COUNTER

HTML = """
<html><head><title>ignored</title><style>p {color: red}</style></head><body>
<p>Intro text before any heading explains what this guide covers for new staff.</p>
<h1>Expenses</h1>
<p>Contractors claim expenses with a receipt attached to the claim.</p>
<ul><li>Travel is reimbursed at cost.</li><li><p>Equipment needs approval first.</p></li></ul>
<h2>Empty section</h2>
<p>ok</p>
<h2>Rates</h2>
<table><tr><th>Item</th><th>Rate</th></tr><tr><td>Mileage</td><td>0.50 USD per km</td></tr></table>
<pre>claim --amount 420
  --receipt r-1</pre>
<script>var x = "never read";</script>
</body></html>
"""


def test_chunks_follow_headings_and_merge_short_sections() -> None:
    page = chunk_page(HTML)
    chunks = page.chunks
    # "Empty section" has a body of 1 token ("ok") < min_tokens 8: it is merged into the
    # next chunk ("Rates"), not dropped; the merged chunk's heading path is the two
    # sections' common prefix. The intro before the first heading is its own chunk.
    assert [(c.index, c.heading_path, c.level) for c in chunks] == [
        (0, "", 0), (1, "Expenses", 1), (2, "Expenses", 1)]
    assert chunks[2].sections == ("Expenses > Empty section", "Expenses > Rates")
    assert chunks[0].text.startswith("Intro text before any heading")
    # list items join the chunk once each, including the <p> nested in an <li>
    assert chunks[1].text == (
        "Expenses\n\nContractors claim expenses with a receipt attached to the claim.\n\n"
        "Travel is reimbursed at cost.\n\nEquipment needs approval first.")
    # table rows join cells with " | "; <pre> keeps its newlines; <script> never appears
    assert chunks[2].text.startswith("Empty section\n\nok\n\nRates\n\n")
    assert "Item | Rate\nMileage | 0.50 USD per km" in chunks[2].text
    assert "claim --amount 420\n  --receipt r-1" in chunks[2].text
    assert "never read" not in page.text and "ignored" not in page.text
    assert all(c.token_cost == DEFAULT_TOKEN_COUNTER.count(c.text) for c in chunks)
    assert all(c.text == page.text[c.start:c.end] for c in chunks)
    assert chunk_html(HTML) == list(chunks)


def test_min_tokens_zero_keeps_short_sections_and_bad_limits_are_rejected() -> None:
    chunks = chunk_html(HTML, min_tokens=0)
    assert [c.heading_path for c in chunks] == [
        "", "Expenses", "Expenses > Empty section", "Expenses > Rates"]
    with pytest.raises(ChunkingError, match="min_tokens must be >= 0, got -1"):
        chunk_html(HTML, min_tokens=-1)
    with pytest.raises(ChunkingError, match="max_tokens must be an integer >= 1, got 0"):
        chunk_page(HTML, max_tokens=0)
    with pytest.raises(ChunkingError, match="html must be a string, got bytes"):
        chunk_page(b"<p>x</p>")  # type: ignore[arg-type]  # the wrong type on purpose


# ------------------------------------------------------------- replayed chunker bug reports


def test_short_bodies_under_min_tokens_are_merged_not_lost() -> None:
    # Replayed: 4-token bodies under the 8-token minimum used to give no chunk at all.
    # "A", "short", "B", "short": 1 token each, 4 in all < 8, so the two sections merge
    # into one chunk that still holds every word.
    chunks = chunk_html("<h1>A</h1><p>short</p><h2>B</h2><p>short</p>")
    assert [(c.text, c.heading_path, c.sections) for c in chunks] == [
        ("A\n\nshort\n\nB\n\nshort", "A", ("A", "A > B"))]


LONG = "Every contractor files the weekly timesheet before Friday noon. " * 3


def test_heading_path_names_every_open_heading() -> None:
    html = (f"<h1>Handbook</h1><p>{LONG}</p><h2>Expenses</h2><p>{LONG}</p>"
            f"<h3>Travel</h3><p>{LONG}</p><h2>Leave</h2><p>{LONG}</p><h1>Appendix</h1><p>{LONG}</p>")
    chunks = chunk_html(html)
    # an h2 closes the open h3; an h1 closes everything
    assert [(c.heading_path, c.heading, c.level) for c in chunks] == [
        ("Handbook", "Handbook", 1), ("Handbook > Expenses", "Expenses", 2),
        ("Handbook > Expenses > Travel", "Travel", 3), ("Handbook > Leave", "Leave", 2),
        ("Appendix", "Appendix", 1)]
    assert [c.index for c in chunks] == [0, 1, 2, 3, 4]
    assert chunk_document(chunks[2]).startswith("Handbook > Expenses > Travel\n\nTravel\n\n")


def test_lead_paragraph_and_bare_div_text_are_kept() -> None:
    # Replayed: text before the first heading and text directly inside a <div> were lost.
    html = (f"<body>Lead words before anything. <div>Bare div text, no paragraph tag."
            f"<div>inner div text</div> trailing div words</div><h1>Next</h1><p>{LONG}</p>")
    page = chunk_page(html)
    assert page.text.startswith("Lead words before anything.\n\nBare div text, no paragraph "
                                "tag.\n\ninner div text\n\ntrailing div words\n\nNext")
    assert page.chunks[0].heading_path == ""
    assert "trailing div words" in page.chunks[0].text


def test_section_holding_only_a_small_table_is_kept() -> None:
    # Replayed: a section whose only content is a small table was dropped.
    html = (f"<h1>Policy</h1><p>{LONG}</p><h2>Rates</h2>"
            "<table><tr><th>Item</th><th>Rate</th></tr><tr><td>km</td><td>0.5</td></tr></table>")
    chunks = chunk_html(html)
    assert any("Rates\n\nItem | Rate\nkm | 0.5" in c.text for c in chunks)


TABLE = "<table>" + "".join(
    f"<tr><td>row {i} item</td><td>{i * 10} USD per unit</td></tr>" for i in range(12)) + "</table>"
ROWS = [f"row {i} item | {i * 10} USD per unit" for i in range(12)]


def test_table_that_fits_alone_is_never_cut_between_rows() -> None:
    # Replayed: a tight budget cut a table between rows. The table alone costs
    # 12 rows x 9 tokens = 108 tokens ("row", "0", "item", "|", "0", "USD", "per", "unit"
    # plus the two-digit cells); with the paragraph before it, it exceeds 120, so it
    # starts a chunk of its own, whole.
    table_tokens = DEFAULT_TOKEN_COUNTER.count("\n".join(ROWS))
    assert table_tokens <= 120
    chunks = chunk_html(f"<h1>Rates</h1><p>{LONG}</p>{TABLE}", max_tokens=120)
    tables = [c for c in chunks if "row 0 item" in c.text]
    assert len(tables) == 1 and tables[0].text == "\n".join(ROWS) and tables[0].cut == ""
    assert tables[0].heading_path == "Rates"


def test_table_over_the_limit_is_cut_at_rows_and_marked() -> None:
    chunks = [c for c in chunk_html(f"<h1>Rates</h1>{TABLE}", max_tokens=30)
              if "row" in c.text]
    assert len(chunks) > 1
    assert {(c.cut, c.parts) for c in chunks} == {("rows", len(chunks))}
    assert [c.part for c in chunks] == list(range(1, len(chunks) + 1))
    # every piece holds whole rows, and together they hold every row once, in order
    assert [row for c in chunks for row in c.text.split("\n")] == ROWS
    assert all(c.token_cost <= 30 for c in chunks)


def test_code_block_over_the_limit_is_cut_at_lines() -> None:
    lines = [f"    step_{i} = run(step_{i - 1}, retries=3)" for i in range(1, 15)]
    code = "\n".join(lines)
    chunks = [c for c in chunk_html(f"<h2>Code</h2><pre>{code}</pre>", max_tokens=40)
              if c.cut]
    assert len(chunks) > 1 and {c.cut for c in chunks} == {"lines"}
    # whole lines, indentation kept, each once and in order
    assert [ln for c in chunks for ln in c.text.split("\n")] == lines


def test_over_long_paragraph_is_cut_at_sentences_then_words() -> None:
    sentence = "The contractor policy requires approval before purchase."
    chunks = chunk_html(f"<p>{' '.join([sentence] * 6)}</p>", max_tokens=20)
    assert {c.cut for c in chunks} == {"sentences"}
    assert [c.text for c in chunks] == [f"{sentence} {sentence}"] * 3
    long_word = "x" * 3000  # one word of 375 tokens: cut at characters, marked like the rest
    cut = chunk_page(f"<h1>Blob</h1><p>{long_word}</p>", max_tokens=40).chunks
    pieces = [c for c in cut if c.cut]
    assert {c.cut for c in pieces} == {"chars"} and len(pieces) == math.ceil(3000 / 320)
    assert all(c.token_cost <= 40 and c.heading_path == "Blob" for c in pieces)
    assert "".join(c.text for c in pieces) == long_word
    assert [(c.part, c.parts) for c in pieces] == [(k, len(pieces))
                                                  for k in range(1, len(pieces) + 1)]
    words = chunk_html("<p>" + " ".join(["word"] * 30) + "</p>", max_tokens=7)
    assert {c.cut for c in words} == {"words"}  # one line, one sentence: words it is
    assert all(c.token_cost <= 7 for c in words)
    assert " ".join(c.text for c in words) == " ".join(["word"] * 30)


def test_layout_tables_are_read_as_paragraphs_and_br_breaks_lines() -> None:
    # A table holding block elements lays a page out (pydoc's pages): its cells are read
    # as paragraphs, not joined into one row; <br> is a line break inside a paragraph.
    html = ("<table><tr><td><p>first cell para</p></td><td>second<br>cell&nbsp;lines</td>"
            "</tr></table>")
    assert chunk_page(html).text == "first cell para\n\nsecond\ncell lines"


def test_comments_doctype_and_dropped_elements_are_not_text() -> None:
    html = ("<!DOCTYPE html><html><head><title>T</title></head><body><!-- note -->"
            "<p>kept words</p><noscript>no</noscript><template>tpl</template></body></html>")
    assert chunk_page(html).text == "kept words"
    assert chunk_page("").chunks == () and chunk_page("<p> </p>").chunks == ()


def test_deep_nesting_needs_no_recursion() -> None:
    html = "<div>" * 5000 + "deep text" + "</div>" * 5000
    assert chunk_page(html).text == "deep text"


# ------------------------------------------------------------- the no-loss property

_WORDS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=9)
_TEXT = st.lists(_WORDS, min_size=1, max_size=12).map(" ".join)


def _element(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    wrapped = st.tuples(st.sampled_from(["p", "div", "span", "b", "li", "section", "h1", "h2",
                                         "h3", "blockquote", "dd", "td"]),
                        st.lists(children, min_size=1, max_size=4))
    rows = st.lists(st.lists(children, min_size=1, max_size=3), min_size=1, max_size=4)
    return st.one_of(
        wrapped.map(lambda t: f"<{t[0]}> {' '.join(t[1])} </{t[0]}>"),
        rows.map(lambda rs: "<table>" + "".join(
            "<tr>" + "".join(f"<td> {c} </td>" for c in r) + "</tr>" for r in rs) + "</table>"),
        _TEXT.map(lambda t: f"<pre>{t}</pre>"),
        st.just("<br>"),
    )


_PAGES = st.recursive(_TEXT, _element, max_leaves=30).map(lambda body: f"<body>{body}</body>")


def _visible_text(html: str) -> str:
    """The oracle: BeautifulSoup's own get_text() of the page, dropped elements removed."""
    soup = BeautifulSoup(html, "html.parser")
    for tag in soup.find_all(["script", "style", "noscript", "template", "head"]):
        tag.decompose()
    return soup.get_text(" ")


@settings(max_examples=150, deadline=None)
@given(html=_PAGES, max_tokens=st.integers(3, 60), min_tokens=st.integers(0, 12))
def test_chunks_keep_every_word_of_the_page_in_order(html, max_tokens, min_tokens) -> None:
    page = chunk_page(html, max_tokens=max_tokens, min_tokens=min_tokens)
    # every word of the visible text, in order, and nothing else (" | " joins cells)
    assert re.findall(r"\w+", page.text) == re.findall(r"\w+", _visible_text(html))
    # each chunk is a verbatim slice of the page text; chunks tile it in order, with only
    # whitespace between them (so the chunks hold every word; a word over the limit is
    # cut at characters, its pieces adjacent)
    cursor = 0
    for i, chunk in enumerate(page.chunks):
        assert chunk.index == i and chunk.text == page.text[chunk.start:chunk.end]
        assert chunk.text.strip() and not page.text[cursor:chunk.start].strip()
        assert chunk.token_cost == DEFAULT_TOKEN_COUNTER.count(chunk.text)
        # never over the limit, unless one character alone is
        assert chunk.token_cost <= max_tokens or len(chunk.text) == 1
        cursor = chunk.end
    assert not page.text[cursor:].strip()
    assert chunk_page(html, max_tokens=max_tokens, min_tokens=min_tokens) == page


def _chunk(index: int, text: str) -> Chunk:
    return Chunk(index, f"h{index}", 1, text, DEFAULT_TOKEN_COUNTER.count(text))


def test_admit_chunks_best_first_until_budget() -> None:
    # token costs (approx counter: one token per short word, "." is one token):
    # a: "alpha beta gamma." = 4, b: "one two." = 3, c: "x y z w v." = 6
    a, b, c = _chunk(0, "alpha beta gamma."), _chunk(1, "one two."), _chunk(2, "x y z w v.")
    scored = [ScoredChunk(a, 0.5), ScoredChunk(b, 2.0), ScoredChunk(c, 1.0)]
    # budget 9: b (3) then c (6) = 9 fits; a would make 13 -> stop.
    admitted = admit_chunks(scored, top_k=5, token_budget=9)
    assert [x.chunk.index for x in admitted] == [1, 2]
    assert [x.text for x in admitted] == ["one two.", "x y z w v."]
    assert not any(x.truncated for x in admitted)
    # top_k cuts before the budget does
    assert [x.chunk.index for x in admit_chunks(scored, top_k=1, token_budget=100)] == [1]
    # budget 8 admits b (3); c (6) does not fit and is skipped; a (4) fits after it
    # (admit_top_k's rule, the one the page strategies use)
    assert [x.chunk.index for x in admit_chunks(scored, token_budget=8)] == [1, 0]


def test_admit_chunks_ties_break_by_index() -> None:
    a, b = _chunk(0, "same score here."), _chunk(1, "same score too.")
    out = admit_chunks([ScoredChunk(b, 1.0), ScoredChunk(a, 1.0)], token_budget=100)
    assert [x.chunk.index for x in out] == [0, 1]


def test_first_chunk_over_budget_is_cut_at_paragraph_then_sentence() -> None:
    big = _chunk(0, "First para one. Still first.\n\nSecond para is here.")
    # 1 per word (<= 8 chars), 1 per ".": "First para one." = 4,
    # "First para one. Still first." = 4+3 = 7, the whole text 7+5 = 12.
    out = admit_chunks([ScoredChunk(big, 3.0)], token_budget=10)
    assert len(out) == 1 and out[0].truncated
    assert out[0].text == "First para one. Still first."
    assert out[0].token_cost == 7
    # budget 5: the first paragraph (7) does not fit; cut at the sentence boundary
    out = admit_chunks([ScoredChunk(big, 3.0)], token_budget=5)
    assert out[0].text == "First para one." and out[0].truncated


@pytest.mark.parametrize("kwargs, message", [
    ({"top_k": -1}, "top_k must be >= 0, got -1"),
    ({"token_budget": -5}, "token_budget must be >= 0, got -5"),
])
def test_admit_chunks_rejects_bad_arguments(kwargs, message) -> None:
    with pytest.raises(ChunkingError, match=message):
        admit_chunks([], **kwargs)


def test_admit_and_the_page_strategies_admit_the_same_chunks() -> None:
    # one rule: `junction admit` (admit_chunks) and judge_top_k (admit_top_k over the page
    # suite's chunk contexts, ids "<page>#c<index>") admit the same chunks from the same
    # scores. Costs: 4, 3, 6, 3, 4 tokens; budget 12, top 4, noise floor 0.3 logits.
    texts = ["alpha beta gamma.", "one two.", "x y z w v.", "red blue.", "up down left."]
    chunks = [_chunk(i, t) for i, t in enumerate(texts)]
    scores = [1.0, 2.0, 1.9, 1.8, 1.85]
    # admission order: tie group {1, 2, 3, 4} within 0.3 of 2.0, in page order, then 0.
    # 1 (3) -> 3; 2 (6) -> 9; 3 (3) -> 12; 4 (4) does not fit, skipped; 0 (4) does not fit.
    # Without the floor (exact ties only) the order is 1, 2, 4, 3: 1, 2 fit (9), 4 does not,
    # 3 fits (12): the same set here, so the floor is checked on its own order below.
    cli = admit_chunks([ScoredChunk(c, s) for c, s in zip(chunks, scores, strict=False)], top_k=4,
                       token_budget=12, tie_logits=0.3)
    contexts: list[ContextResource | ToolResource] = [
        ContextResource(id=f"memory-x#c{c.index:03d}", content=c.text, token_cost=c.token_cost)
        for c in chunks]
    strategy = admit_top_k([ScoredResource(r, s) for r, s in zip(contexts, scores, strict=False)],
                           Budget(max_tokens=12), k=4, tie_logits=0.3)
    assert [c.chunk.index for c in cli] == [1, 2, 3]
    assert [contexts.index(r.resource) for r in strategy.admitted] == [1, 2, 3]
    # the floor orders a tie group by page order. Budget 7, top 2: 1 (3); 2 (6) does not
    # fit; then 3 (3, the group's page order) -> 6. Exact ties only: 1, 2 skipped, then 4
    # (1.85 > 1.8; 4 tokens) -> 7.
    pairs = [ScoredChunk(c, s) for c, s in zip(chunks, scores, strict=False)]
    resources = [ScoredResource(r, s) for r, s in zip(contexts, scores, strict=False)]
    for floor, expected in ((0.3, [1, 3]), (0.0, [1, 4])):
        cli = admit_chunks(pairs, top_k=2, token_budget=7, tie_logits=floor)
        strategy = admit_top_k(resources, Budget(max_tokens=7), k=2, tie_logits=floor)
        assert [c.chunk.index for c in cli] == expected
        assert [contexts.index(r.resource) for r in strategy.admitted] == expected


@pytest.mark.parametrize(("html", "offset"), [
    ("\0" * 100_000, 0),  # the replayed report: 100 KB of NUL bytes, "1 chunk, 33334 tokens"
    ("<p>caf\u00e9</p>\0", 12),  # the byte offset counts UTF-8 bytes (é is two)
    ("".join(map(chr, range(1, 32))) * 40, 0),  # ASCII control bytes, ESC among them
])
def test_binary_content_is_refused_at_its_byte(html, offset) -> None:
    with pytest.raises(ChunkingError, match=f"^html: binary content at byte {offset};"):
        chunk_page(html)


def test_text_with_a_few_control_characters_is_still_a_page() -> None:
    page = chunk_page("<p>\x1b[31mred\x1b[0m alert: the build failed</p>")
    assert page.chunks[0].text.startswith("\x1b[31mred")
