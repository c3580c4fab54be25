"""HTML chunking on heading boundaries and verbatim chunk admission (no model needed)."""

from __future__ import annotations

import pytest

from junction.chunking import (
    Chunk,
    ChunkingError,
    ScoredChunk,
    chunk_html,
    select_top_chunks,
)
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


def test_chunks_follow_headings_and_drop_near_empty() -> None:
    chunks = chunk_html(HTML)
    # "Empty section" has a body of 1 token ("ok") < min_tokens 8, so it is dropped;
    # the intro before the first heading is its own chunk (level 0).
    assert [(c.index, c.heading, c.level) for c in chunks] == [
        (0, "", 0), (1, "Expenses", 1), (2, "Rates", 2)]
    assert chunks[0].text.startswith("Intro text before any heading")
    # list items join the chunk once each, including the <p> nested in an <li>
    assert chunks[1].text == (
        "Expenses\n\nContractors claim expenses with a receipt attached to the claim.\n\n"
        "Travel is reimbursed at cost.\n\nEquipment needs approval first.")
    # table rows join cells with " | "; <pre> keeps its newlines; <script> never appears
    assert "Item | Rate\n\nMileage | 0.50 USD per km" in chunks[2].text
    assert "claim --amount 420\n  --receipt r-1" in chunks[2].text
    assert "never read" not in " ".join(c.text for c in chunks)
    assert all(c.token_cost == DEFAULT_TOKEN_COUNTER.count(c.text) for c in chunks)


def test_min_tokens_zero_keeps_short_sections_and_negative_is_rejected() -> None:
    assert "Empty section" in [c.heading for c in chunk_html(HTML, min_tokens=0)]
    with pytest.raises(ChunkingError, match="min_tokens must be >= 0, got -1"):
        chunk_html(HTML, min_tokens=-1)


def _chunk(index: int, text: str) -> Chunk:
    return Chunk(index, f"h{index}", 1, text, DEFAULT_TOKEN_COUNTER.count(text))


def test_select_top_chunks_best_first_until_budget() -> None:
    # token costs (approx counter: one token per short word, "." is one token):
    # a: "alpha beta gamma." = 4, b: "one two." = 3, c: "x y z w v." = 6
    a, b, c = _chunk(0, "alpha beta gamma."), _chunk(1, "one two."), _chunk(2, "x y z w v.")
    scored = [ScoredChunk(a, 0.5), ScoredChunk(b, 2.0), ScoredChunk(c, 1.0)]
    # budget 9: b (3) then c (6) = 9 fits; a would make 13 -> stop.
    admitted = select_top_chunks(scored, top_k=5, token_budget=9)
    assert [x.chunk.index for x in admitted] == [1, 2]
    assert [x.text for x in admitted] == ["one two.", "x y z w v."]
    assert not any(x.truncated for x in admitted)
    # top_k cuts before the budget does
    assert [x.chunk.index for x in select_top_chunks(scored, top_k=1, token_budget=100)] == [1]
    # a worse chunk never jumps a better one: budget 8 admits b (3), c (6) does not fit, stop
    assert [x.chunk.index for x in select_top_chunks(scored, token_budget=8)] == [1]


def test_select_top_chunks_ties_break_by_index() -> None:
    a, b = _chunk(0, "same score here."), _chunk(1, "same score too.")
    out = select_top_chunks([ScoredChunk(b, 1.0), ScoredChunk(a, 1.0)], token_budget=100)
    assert [x.chunk.index for x in out] == [0, 1]


def test_first_chunk_over_budget_is_cut_at_paragraph_then_sentence() -> None:
    big = _chunk(0, "First para one. Still first.\n\nSecond para is here.")
    # 1 per word (<= 8 chars), 1 per ".": "First para one." = 4,
    # "First para one. Still first." = 4+3 = 7, the whole text 7+5 = 12.
    out = select_top_chunks([ScoredChunk(big, 3.0)], token_budget=10)
    assert len(out) == 1 and out[0].truncated
    assert out[0].text == "First para one. Still first."
    assert out[0].token_cost == 7
    # budget 5: the first paragraph (7) does not fit; cut at the sentence boundary
    out = select_top_chunks([ScoredChunk(big, 3.0)], token_budget=5)
    assert out[0].text == "First para one." and out[0].truncated


@pytest.mark.parametrize("kwargs, message", [
    ({"top_k": -1}, "top_k must be >= 0, got -1"),
    ({"token_budget": -5}, "token_budget must be >= 0, got -5"),
])
def test_select_top_chunks_rejects_bad_arguments(kwargs, message) -> None:
    with pytest.raises(ChunkingError, match=message):
        select_top_chunks([], **kwargs)
