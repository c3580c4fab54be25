"""Page admission: the chunks of a page admitted verbatim, top-K inside the token budget.

Two strategies for suites whose contexts are the chunks of a page (``bfcl-memory-pages``,
JSON Lines suites with ``"format": "html"`` contexts); both expose contexts only, no tool:

- ``bm25_top_k``: the BM25 lane's order (``junction.candidates``) whatever the run's pool
  rule (the strategy owns it, as its name says), matches only (a chunk sharing no term
  with the query is never admitted);
- ``judge_top_k``: the first stage (the run's pool rule, BM25 by default; the pool
  limit's chunks), then every chunk of the
  pool judged against the objective in one batch (explore mode: each chunk keeps the score
  it earned against the query), the judge reading the chunk's heading path then its text
  (``junction.pages.chunking.heading_document``), cut to ``STRATEGY_JUDGE_CONFIG``'s 64 tokens;
  scores within the noise floor are tied (``junction.pages.admission.tie_groups``: smaller id,
  that is earlier chunk, first) and a degenerate batch admits nothing (the project's rule,
  ``junction.judge.cache.JudgedBatch``).

Both admit with ``junction.pages.admission.admit_top_k``: at most ``top_k`` (default
``junction.pages.admission.DEFAULT_TOP_K``, 5) chunks, best first, each only if the exposed set
still fits every limit of the task's budget (a chunk that does not fit is skipped and the
next is tried). A chunk is admitted whole, its content unchanged.

``judge_page_documents`` is the scoring step shared with ``junction admit``: explore
scores, or in exploit mode min(score against the sub-query, score against the original
task) per document (``junction.pages.admission.exploit_scores``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import cast

from junction.candidates import CandidatePools, PoolRequest, candidate_pools
from junction.judge.cache import judge_documents
from junction.pages.admission import (
    DEFAULT_TOP_K,
    ScoredResource,
    admit_top_k,
    exploit_scores,
    reject_degenerate,
    tie_groups,
)
from junction.pages.chunking import heading_document
from junction.resources import ContextResource
from junction.select.problem import make_selection
from junction.strategies.base import FunctionStrategy, StrategyResult, joint_problem
from junction.tasks import BenchmarkTask, RouterView

__all__ = [
    "PageScores",
    "context_document",
    "judge_page_documents",
    "make_bm25_top_k_strategy",
    "make_judge_top_k_strategy",
]


def context_document(context: ContextResource) -> str:
    """The text the judge reads for a page chunk context: its ``metadata["heading_path"]``
    (when present) on the first line, then its content (``heading_document``)."""
    path = context.metadata.get("heading_path")
    return heading_document(path if isinstance(path, str) else "", context.content)


@dataclass(frozen=True)
class PageScores:
    """Judge scores (logits) of a page's documents, input order.

    - ``scores``: the admission scores (explore: against the query; exploit: the minimum of
      the two), ``None`` for an empty document
    - ``query_scores`` / ``original_scores``: the two sides in exploit mode (original: empty
      in explore mode)
    - ``degenerate``: the query's batch told the documents apart by nothing
    - ``truncated``: document index -> (tokens, tokens kept) for each document the judge cut
    """

    scores: list[float | None]
    query_scores: list[float | None]
    original_scores: list[float | None] = field(default_factory=list)
    degenerate: bool = False
    truncated: dict[int, tuple[int, int]] = field(default_factory=dict)


def judge_page_documents(judge, cache, query: str, documents: Sequence[str],
                         instruction, noise_floor: float = 0.0,
                         original: str | None = None) -> PageScores:
    """Score ``documents`` against ``query`` (explore) or, with ``original``, against both
    the sub-query and the original task, keeping the minimum (exploit).

    Scores come from ``junction.judge.cache.judge_documents`` (cached when ``cache`` is
    given); a batch is degenerate when either side's batch is.
    """
    batch = judge_documents(judge, cache, query, documents, instruction, noise_floor)
    if original is None:
        return PageScores(scores=list(batch.scores), query_scores=list(batch.scores),
                          degenerate=batch.degenerate, truncated=dict(batch.truncations))
    other = judge_documents(judge, cache, original, documents, instruction, noise_floor)
    keys = {str(i): i for i, s in enumerate(batch.scores) if s is not None}
    # the same documents, so both sides scored exactly the non-empty ones (``keys``)
    low = exploit_scores({k: cast(float, batch.scores[i]) for k, i in keys.items()},
                         {k: cast(float, other.scores[i]) for k, i in keys.items()})
    return PageScores(scores=[low.get(str(i)) for i in range(len(documents))],
                      query_scores=list(batch.scores), original_scores=list(other.scores),
                      degenerate=batch.degenerate or other.degenerate,
                      truncated=dict(batch.truncations))


def _top_k_result(name: str, view: RouterView, pools, items: list[ScoredResource],
                  top_k: int, tie_logits: float, degenerate: bool,
                  extra: dict) -> StrategyResult:
    problem = joint_problem(view, pools)
    if degenerate:  # scores that tell nothing apart admit nothing
        result = reject_degenerate(items, tie_logits)
    else:
        result = admit_top_k(items, view.budget, k=top_k, tie_logits=tie_logits)
    selection = make_selection(name, problem, result.admitted_ids, [], status="heuristic")
    return StrategyResult(selection=selection, pools=pools, extra={
        "top_k": top_k,
        "admitted_order": result.admitted_ids,
        "rejected": {r.item.resource_id: r.reason for r in result.rejected},
        **extra,
    })


BM25_RULE = "bm25"
"""The pool rule ``bm25_top_k`` ranks by, whatever the run's."""


def make_bm25_top_k_strategy(top_k: int = DEFAULT_TOP_K,
                             pool: str = BM25_RULE) -> FunctionStrategy:
    """``bm25_top_k``: the ``pool`` rule's (BM25's) matching chunks, whatever the run's
    rule, top ``top_k`` within the budget."""

    def strategy(view: RouterView, request: PoolRequest) -> StrategyResult:
        pools = candidate_pools(view, request.with_rule(pool))
        pools = CandidatePools(contexts=pools.contexts, tools=[])
        items = [ScoredResource(view.context(c.resource_id), c.score)
                 for c in pools.contexts if c.matched]
        return _top_k_result("bm25_top_k", view, pools, items, top_k, 0.0, False, {})

    return FunctionStrategy(strategy)


def make_judge_top_k_strategy(
    calibration_tasks: Sequence[BenchmarkTask] = (),
    top_k: int = DEFAULT_TOP_K,
    config=None,
    instruction=None,
    use_cache: bool = True,
) -> FunctionStrategy:
    """``judge_top_k`` (module docstring): loads the judge once per process (``config``
    default ``STRATEGY_JUDGE_CONFIG``), runs its smoke test (``SmokeTestError`` naming the
    failed gate) and opens the score cache (``state_dir()/judge_scores.sqlite``).
    ``calibration_tasks`` are ignored: top-K needs no floor. ``extra`` of each result holds
    ``judge_scores`` (context id -> logits), the instruction and model hashes, ties, the
    noise floor, truncations and whether the batch was degenerate."""
    from junction.judge.instructions import RETRIEVAL_INSTRUCTION
    from junction.judge.session import judge_session
    from junction.strategies.judge_admission import STRATEGY_JUDGE_CONFIG

    instruction = instruction or RETRIEVAL_INSTRUCTION
    session = judge_session(config or STRATEGY_JUDGE_CONFIG, (instruction,), use_cache)
    judge, cache, noise = session.judge, session.cache, session.noise
    provenance = session.provenance(instruction)

    def strategy(view: RouterView, pool: PoolRequest) -> StrategyResult:
        pools = candidate_pools(view, pool)
        pools = CandidatePools(contexts=pools.contexts, tools=[])
        contexts = [view.context(c.resource_id) for c in pools.contexts]
        judged = judge_page_documents(judge, cache, view.objective,
                                      [context_document(c) for c in contexts], instruction,
                                      noise.floor)
        items = [ScoredResource(c, s) for c, s in zip(contexts, judged.scores, strict=True)
                 if s is not None]
        ties = [[s.resource_id for s in g] for g in tie_groups(items, noise.floor) if len(g) > 1]
        return _top_k_result("judge_top_k", view, pools, items, top_k, noise.floor,
                             judged.degenerate, {
                                 "judge_scores": {
                                     i.resource_id: round(i.score, 6)
                                     for i in sorted(items, key=lambda i: i.resource_id)},
                                 "instruction_hash": judge.instruction_hash(instruction),
                                 "model_hash": judge.model_hash,
                                 "judge_provenance": provenance,
                                 "judge_ties": ties,
                                 "judge_degenerate": judged.degenerate,
                                 "judge_truncated": {contexts[i].id: list(cut) for i, cut
                                                     in sorted(judged.truncated.items())},
                             })

    return FunctionStrategy(strategy)
