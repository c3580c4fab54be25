"""Candidate lanes: rank contexts and tools against the task objective with BM25 (bm25s).

Each lane returns ``Candidate`` records ordered by descending score, then ascending resource
id, cut to ``limit``. Scores are BM25 (Lucene variant, k1=1.5, b=0.75: bm25s defaults,
Robertson & Zaragoza 2009), float >= 0, comparable only within one lane and one query.
Both lanes tokenise with ``junction.text.lexical_tokens`` (one token per CJK or Thai
character; handed to bm25s pre-tokenised). A candidate with score 0 shares no term with
the query: it is not a match (``Candidate.matched`` is False), ranks after every match
(by id, so the pool stays deterministic) and is never credited by the lane metrics
(``junction.evaluate``); it stays in the pool because a task's prior may still make it
worth exposing.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import bm25s
from pydantic import BaseModel, ConfigDict

from junction.resources import ContextResource, ResourceKind, ToolResource
from junction.tasks import RouterView
from junction.text import lexical_tokens

# bm25s logs every index build at DEBUG; a benchmark builds thousands.
logging.getLogger("bm25s").setLevel(logging.WARNING)

__all__ = [
    "Candidate",
    "CandidatePools",
    "bm25_scores",
    "candidate_pools",
    "LexicalContextCandidateGenerator",
    "LexicalToolCandidateGenerator",
    "normalise_scores",
]


class Candidate(BaseModel):
    """One ranked candidate: resource id, kind, lane score, 0-based rank."""

    model_config = ConfigDict(frozen=True, allow_inf_nan=False)

    resource_id: str
    kind: ResourceKind
    score: float
    rank: int

    @property
    def matched(self) -> bool:
        """Does the candidate share a term with the query (lane score > 0)?"""
        return self.score > 0


def bm25_scores(query: str, documents: Sequence[str]) -> list[float]:
    """BM25 score of ``query`` against each of ``documents`` (shape: len(documents)).

    Query terms absent from every document contribute 0; an empty corpus gives ``[]``.
    """
    if not documents:
        return []
    corpus_tokens = [lexical_tokens(d) for d in documents]
    if not any(corpus_tokens):
        return [0.0] * len(documents)
    retriever = bm25s.BM25()
    retriever.index(corpus_tokens, show_progress=False)
    vocab = retriever.vocab_dict
    query_tokens = [tok for tok in lexical_tokens(query) if tok in vocab]
    if not query_tokens:
        return [0.0] * len(documents)
    return [round(float(s), 6) for s in retriever.get_scores(query_tokens)]


def _rank(ids: Sequence[str], scores: Sequence[float], kind: ResourceKind, limit: int | None):
    order = sorted(range(len(ids)), key=lambda i: (-scores[i], ids[i]))
    if limit is not None:
        order = order[:limit]
    return [
        Candidate(resource_id=ids[i], kind=kind, score=scores[i], rank=r)
        for r, i in enumerate(order)
    ]


class LexicalContextCandidateGenerator:
    """BM25 over each context's content and source kind."""

    def generate(
        self, query: str, contexts: Sequence[ContextResource], limit: int | None = None
    ) -> list[Candidate]:
        """Ranked context candidates (see module docstring for the order)."""
        texts = [f"{c.content} {c.source.value}" for c in contexts]
        return _rank([c.id for c in contexts], bm25_scores(query, texts), "context", limit)


class LexicalToolCandidateGenerator:
    """BM25 over each tool's description and rendered schema text."""

    def generate(
        self, query: str, tools: Sequence[ToolResource], limit: int | None = None
    ) -> list[Candidate]:
        """Ranked tool candidates (see module docstring for the order)."""
        texts = [f"{t.description} {t.rendered_schema()}" for t in tools]
        return _rank([t.id for t in tools], bm25_scores(query, texts), "tool", limit)


def normalise_scores(candidates: Sequence[Candidate]) -> dict[str, float]:
    """Lane scores divided by the lane's best score, so unary utility lies in [0, 1].

    Max-normalisation keeps the lane's order and makes the two lanes' scales comparable
    (both top candidates get 1.0); a lane whose best score is 0 gives all zeros.
    """
    best = max((c.score for c in candidates), default=0.0)
    if best <= 0:
        return {c.resource_id: 0.0 for c in candidates}
    return {c.resource_id: round(c.score / best, 6) for c in candidates}


@dataclass(frozen=True)
class CandidatePools:
    """Ranked candidates of both lanes for one view."""

    contexts: list[Candidate]
    tools: list[Candidate]


def candidate_pools(view: RouterView,
                    pool_limit: int | tuple[int | None, int | None] | None) -> CandidatePools:
    """Rank the view's contexts and tools against its objective; keep ``pool_limit`` each
    (a pair: ``(context limit, tool limit)``; None: the whole lane)."""
    context_limit, tool_limit = (pool_limit if isinstance(pool_limit, (tuple, list))
                                 else (pool_limit, pool_limit))
    return CandidatePools(
        contexts=LexicalContextCandidateGenerator().generate(view.objective, view.contexts,
                                                             context_limit),
        tools=LexicalToolCandidateGenerator().generate(view.objective, view.tools, tool_limit),
    )
