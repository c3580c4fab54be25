"""Per-task metrics: exposed-set recall/precision, pair coverage, budget use, lane ranking.

Set metrics follow the usual definitions: recall = |exposed ∩ gold| / |gold| (None when
there is no gold), precision = |exposed ∩ gold| / |exposed| (None when nothing is exposed).
Ranking metrics of the candidate lanes (recall@5, nDCG@5, MRR) are computed by
``ir_measures`` (MacAvaney et al., ECIR 2022) with binary qrels (gold = relevance 1).
Candidates are passed to it with score = -rank, so its tie handling cannot reorder a lane.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import ir_measures
from ir_measures import RR, R, nDCG

__all__ = ["set_recall", "set_precision", "pair_coverage", "LaneRanking", "lane_ranking_metrics",
           "RANKING_MEASURES"]

RANKING_MEASURES = {"recall_at_5": R @ 5, "ndcg_at_5": nDCG @ 5, "mrr": RR}
"""Column suffix -> ir_measures measure."""


def set_recall(exposed: Iterable[str], gold: Iterable[str]) -> float | None:
    """|exposed ∩ gold| / |gold|; None when gold is empty."""
    gold = set(gold)
    if not gold:
        return None
    return len(gold & set(exposed)) / len(gold)


def set_precision(exposed: Iterable[str], gold: Iterable[str]) -> float | None:
    """|exposed ∩ gold| / |exposed|; None when nothing is exposed."""
    exposed = set(exposed)
    if not exposed:
        return None
    return len(exposed & set(gold)) / len(exposed)


def pair_coverage(
    exposed_contexts: Iterable[str], exposed_tools: Iterable[str],
    gold_contexts: Sequence[str], gold_tools: Sequence[str],
) -> bool | None:
    """Whether every gold context and every gold tool are exposed together.

    None when the task has no gold context or no gold tool (no pair to cover).
    """
    if not gold_contexts or not gold_tools:
        return None
    return set(gold_contexts) <= set(exposed_contexts) and set(gold_tools) <= set(exposed_tools)


@dataclass(frozen=True)
class LaneRanking:
    """One lane of one query: ranked candidate ids (best first) and the gold ids."""

    query_id: str
    ranked_ids: Sequence[str]
    gold_ids: Sequence[str]


def lane_ranking_metrics(lanes: Sequence[LaneRanking]) -> dict[str, dict[str, float | None]]:
    """query_id -> {recall_at_5, ndcg_at_5, mrr}; all None for a query with no gold.

    Query ids must be unique. One ``ir_measures.iter_calc`` call for the whole batch.
    """
    out: dict[str, dict[str, float | None]] = {
        lane.query_id: {name: None for name in RANKING_MEASURES} for lane in lanes
    }
    qrels = [ir_measures.Qrel(lane.query_id, gid, 1) for lane in lanes for gid in lane.gold_ids]
    run = [
        ir_measures.ScoredDoc(lane.query_id, rid, float(-rank))
        for lane in lanes if lane.gold_ids for rank, rid in enumerate(lane.ranked_ids)
    ]
    if not qrels:
        return out
    by_measure = {measure: name for name, measure in RANKING_MEASURES.items()}
    for metric in ir_measures.iter_calc(list(RANKING_MEASURES.values()), qrels, run):
        out[metric.query_id][by_measure[metric.measure]] = float(metric.value)
    # a query with gold but no candidates at all scores 0 (ir_measures skips it)
    for lane in lanes:
        if lane.gold_ids and not lane.ranked_ids:
            out[lane.query_id] = {name: 0.0 for name in RANKING_MEASURES}
    return out
