"""What one scoring call returns (``ScoreBatch``, with the ``Truncation`` of each text cut
to fit its slot), and the wrapper that skips empty documents (``skipping_empty``), shared
by the judge's batch and naive paths (scorer.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from junction.judge.cache import is_empty_document
from junction.judge.instructions import RETRIEVAL_INSTRUCTION, RerankInstruction

__all__ = ["ScoreBatch", "Truncation", "skipping_empty"]


@dataclass(frozen=True)
class Truncation:
    """A text cut to fit its slot: which one (``query`` or document index), tokens before/after."""

    part: str
    index: int
    original_tokens: int
    kept_tokens: int


@dataclass(frozen=True)
class ScoreBatch:
    """Scores (logits, one per document, input order) and the cuts made to fit the slots.

    - ``scores``: ``None`` for a skipped document (its status says why)
    - ``statuses``: per document, ``scored`` or ``empty`` (empty or whitespace-only text is
      never scored: a model's score for nothing is not a relevance judgement)
    - ``candidate_tokens``: tokens decoded per scored candidate (its document part), for
      throughput (0 for a skipped one)
    """

    scores: list[float | None]
    truncations: list[Truncation] = field(default_factory=list)
    candidate_tokens: list[int] = field(default_factory=list)
    statuses: list[str] = field(default_factory=list)


_ScoringPath = TypeVar("_ScoringPath", bound=Callable[..., ScoreBatch])


def skipping_empty(method: _ScoringPath) -> _ScoringPath:
    """Wrap a scoring path: score the non-empty documents, mark the rest ``empty``."""

    def wrapper(self: Any, query: str, documents: Sequence[str],
                instruction: RerankInstruction = RETRIEVAL_INSTRUCTION) -> ScoreBatch:
        keep = [i for i, d in enumerate(documents) if not is_empty_document(d)]
        inner = (method(self, query, [documents[i] for i in keep], instruction) if keep
                 else ScoreBatch(scores=[]))
        scores: list[float | None] = [None] * len(documents)
        tokens = [0] * len(documents)
        statuses = ["empty"] * len(documents)
        for j, i in enumerate(keep):
            scores[i], tokens[i], statuses[i] = inner.scores[j], inner.candidate_tokens[j], "scored"
        truncations = [t if t.part == "query" else Truncation(t.part, keep[t.index],
                                                               t.original_tokens, t.kept_tokens)
                       for t in inner.truncations]
        return ScoreBatch(scores=scores, truncations=truncations, candidate_tokens=tokens,
                          statuses=statuses)

    wrapper.__doc__ = method.__doc__
    wrapper.__name__ = method.__name__
    return cast(_ScoringPath, wrapper)
