"""Ranking measures of a relevance stage, scored on its own before any selection.

A relevance stage (``junction.learned.relevance``) gives each pooled candidate of a lane a
score; ``ranks`` turns that into 1-based ranks (descending score, ties by ascending id, so
a ranking is deterministic). On one task:

- ``depth_all(ranks, needed)``: the depth at which every needed id is in, i.e. the rank
  of the last one (``None``, "never", when one of them is not ranked: not pooled);
  0 when nothing is needed;
- ``depth_cover(ranks, groups)``: for each group (a needed tool and the documents that
  make it usable), the best rank among the group's members, then the worst over the
  groups: the depth at which some member of every group is in (``None`` when a group has
  no ranked member; 0 with no group);
- ``recall_at(ranked, relevant, ks)``: ``ir_measures``' ``R@k`` (MacAvaney, Macdonald &
  Ounis, ECIR 2022) with binary qrels; ``relevant`` includes ids that were never ranked
  (they count in the denominator), so a pool that misses gold shows as lost recall.

``summarise(depths)``: count, median and 75th percentile (the lower of the two middle
values: a depth that some task actually had), and how many were ``None`` ("never"), which
sort after every rank: a median that is "never" says so.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

__all__ = ["DepthSummary", "depth_all", "depth_cover", "ranks", "recall_at", "summarise"]


def ranks(scores: Mapping[str, float]) -> dict[str, int]:
    """id -> 1-based rank by descending score, ties broken by ascending id."""
    order = sorted(scores, key=lambda rid: (-scores[rid], rid))
    return {rid: i + 1 for i, rid in enumerate(order)}


def depth_all(ranked: Mapping[str, int], needed: Collection[str]) -> int | None:
    """The largest rank among ``needed`` (0 when empty); ``None`` when one is not ranked."""
    if any(n not in ranked for n in needed):
        return None
    return max((ranked[n] for n in needed), default=0)


def depth_cover(ranked: Mapping[str, int],
                groups: Mapping[str, Collection[str]]) -> int | None:
    """max over groups of (min rank among the group's ranked members) (0 with no group);
    ``None`` when some group has no ranked member."""
    worst = 0
    for members in groups.values():
        best = min((ranked[m] for m in members if m in ranked), default=None)
        if best is None:
            return None
        worst = max(worst, best)
    return worst


def recall_at(ranked: Sequence[str], relevant: Collection[str],
              ks: Sequence[int] = (5, 10, 20)) -> dict[int, float]:
    """k -> recall@k of ``ranked`` (best first) against ``relevant`` (``ir_measures``'
    ``R@k``; 0 for every k when nothing relevant is ranked). Raises ``ValueError`` when
    ``relevant`` is empty (recall is undefined) or an id is ranked twice."""
    import ir_measures

    if not relevant:
        raise ValueError("recall_at: no relevant id (recall is undefined)")
    if len(set(ranked)) != len(ranked):
        raise ValueError("recall_at: an id is ranked twice")
    measures = {ir_measures.parse_measure(f"R@{k}"): k for k in ks}
    qrels = [ir_measures.Qrel("q", rid, 1) for rid in sorted(set(relevant))]
    run = [ir_measures.ScoredDoc("q", rid, float(-i)) for i, rid in enumerate(ranked)]
    out = dict.fromkeys(ks, 0.0)
    if run:
        for m in ir_measures.iter_calc(list(measures), qrels, run):
            out[measures[m.measure]] = float(m.value)
    return out


@dataclass(frozen=True)
class DepthSummary:
    """Depths over tasks: ``n`` tasks, ``never`` of them ``None``; ``median`` and ``p75``
    (``None``: "never", when that quantile falls among the ``None`` ones)."""

    n: int
    never: int
    median: int | None
    p75: int | None

    def cell(self) -> str:
        """``median / p75`` with "never" where a quantile is not reached."""
        def show(v: int | None) -> str:
            return "never" if v is None else str(v)
        return f"{show(self.median)} / {show(self.p75)}"


def _quantile(ordered: Sequence[int | None], q: float) -> int | None:
    """The lower empirical quantile: the value at index ceil(q * n) - 1 of the sorted list
    (``None`` after every int)."""
    import math

    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def summarise(depths: Sequence[int | None]) -> DepthSummary:
    """Median and p75 of ``depths`` (``None`` = never, after every rank); raises
    ``ValueError`` when empty."""
    if not depths:
        raise ValueError("summarise: no depth")
    ordered = sorted(depths, key=lambda d: (d is None, d or 0))
    return DepthSummary(len(ordered), sum(d is None for d in ordered),
                        _quantile(ordered, 0.5), _quantile(ordered, 0.75))
