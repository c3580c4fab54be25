"""Admission of a page's scored chunks (``admit_chunks``, what ``junction admit`` runs):
the one top-K rule (``admission.admit_top_k``) applied to chunks priced as contexts, with
the option to cut an oversized best chunk."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from junction.budget import Budget
from junction.pages.admission import (
    DEFAULT_TOKEN_BUDGET,
    DEFAULT_TOP_K,
    Resource,
    ScoredResource,
    admission_order,
    admit_top_k,
)
from junction.pages.chunking import Chunk, ChunkingError
from junction.resources import ContextResource
from junction.text import SENTENCE_END
from junction.tokens import DEFAULT_TOKEN_COUNTER, TokenCounter

__all__ = ["AdmittedChunk", "ScoredChunk", "admit_chunks", "chunk_id"]


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


def _cut(text: str, budget: int, counter: TokenCounter) -> str:
    """The longest prefix of ``text`` within ``budget`` tokens, cut at a paragraph boundary,
    else a sentence boundary, else a word boundary (the last resort for one huge sentence)."""
    for pieces, joiner in (
        (text.split("\n\n"), "\n\n"),
        (SENTENCE_END.split(text), " "),
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


def chunk_id(chunk: Chunk) -> str:
    """The context id ``admit_chunks`` gives a chunk: ``c`` + its index, zero-padded, so
    the id order is the page order (``admit_top_k``'s tie rule: smaller id first)."""
    return f"c{chunk.index:06d}"


def admit_chunks(
    scored: Sequence[ScoredChunk],
    top_k: int = DEFAULT_TOP_K,
    token_budget: int = DEFAULT_TOKEN_BUDGET,
    tie_logits: float = 0.0,
    counter: TokenCounter = DEFAULT_TOKEN_COUNTER,
    cut_oversized_best: bool = True,
) -> list[AdmittedChunk]:
    """A page's chunks admitted by ``admit_top_k``, the rule the page strategies use.

    Best score first, ties within ``tie_logits`` (the judge's noise floor, logits) in page
    order; at most ``top_k`` chunks; a chunk that would take the total over
    ``token_budget`` tokens is skipped and the next one tried. Chunks are priced by
    ``counter``. The one option where the CLI differs from the strategies (whose contexts
    are priced resources, admitted whole): ``cut_oversized_best`` cuts the best chunk, when
    it alone exceeds the budget, at a paragraph, then sentence, then word boundary
    (``_cut``) and admits it first with ``truncated=True``; the others follow within what
    is left. Raises ``ChunkingError`` if ``top_k`` < 0 or ``token_budget`` < 0,
    ``AdmissionError`` on a non-finite score or ``tie_logits``.
    """
    if top_k < 0:
        raise ChunkingError(f"top_k must be >= 0, got {top_k}")
    if token_budget < 0:
        raise ChunkingError(f"token_budget must be >= 0, got {token_budget}")
    by_id = {chunk_id(s.chunk): s for s in scored}
    items = [ScoredResource(ContextResource(id=chunk_id(s.chunk), content=s.chunk.text,
                                            token_cost=counter.count(s.chunk.text)), s.score)
             for s in scored]
    admitted: list[AdmittedChunk] = []
    already: list[Resource] = []
    order = admission_order(items, tie_logits)
    if cut_oversized_best and order and top_k > 0 and order[0].resource.token_cost > token_budget:
        best = by_id[order[0].resource_id]
        text = _cut(best.chunk.text, token_budget, counter)
        items = [i for i in items if i.resource_id != order[0].resource_id]
        if text:
            cost = counter.count(text)
            admitted.append(AdmittedChunk(best.chunk, best.score, text, cost, truncated=True))
            already.append(ContextResource(id=chunk_id(best.chunk), content=text,
                                           token_cost=cost))
            top_k -= 1
    result = admit_top_k(items, Budget(max_tokens=token_budget), k=top_k, already=already,
                         tie_logits=tie_logits)
    for item in result.admitted:
        s = by_id[item.resource_id]
        admitted.append(AdmittedChunk(s.chunk, s.score, s.chunk.text, item.resource.token_cost))
    return admitted
