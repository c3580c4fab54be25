"""The metric catalog, and the per-task formulas behind it.

What a metric *is* (``Metric``: name, definition, unit, direction, aggregation, summary
column, source) is kept apart from the code that computes it, as in ``ir_measures``
(MacAvaney, Macdonald & Ounis, ECIR 2022). ``METRICS`` is the one list: the trace columns,
the ``strategy_summary`` view's aggregates, the report's table, the diff's rows and the lane
ranking metrics are all read from it.

Set metrics follow the usual definitions: recall = |exposed ∩ gold| / |gold| (None when
there is no gold), precision = |exposed ∩ gold| / |exposed| (None when nothing is exposed).
Ranking metrics of the candidate lanes (recall@5, nDCG@5, MRR) are computed by
``ir_measures`` with binary qrels (gold = relevance 1). Candidates are passed to it with
score = -rank, so its tie handling cannot reorder a lane.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, TypedDict

import ir_measures

__all__ = [
    "METRICS",
    "Display",
    "LaneRanking",
    "Metric",
    "format_change",
    "format_duration",
    "format_value",
    "lane_ranking_metrics",
    "pair_coverage",
    "set_precision",
    "set_recall",
]

Direction = Literal["higher", "lower", "neither"]
Aggregation = Literal["mean", "mean_of_bool"]
ValueType = Literal["bool", "int", "float"]
Display = Literal["percent", "integer", "decimals2"]
"""How a report prints a metric's mean: ``percent`` (a rate or fraction, 100·x with no
decimals: "62%"; a change in points: "+12 points"), ``integer`` (tokens: "1002"), or
``decimals2`` (an objective or a ranking score: "2.25"). ``metrics.json`` keeps full
precision; only the Markdown, HTML and diff output round."""

_IDENTIFIER = re.compile(r"[a-z][a-z0-9_]*")


@dataclass(frozen=True)
class Metric:
    """One per-task metric: what it means and how a strategy summary aggregates it.

    - ``name``: the trace column (``TaskTraceRecord`` field) that holds the per-task value
    - ``column``: the ``strategy_summary`` view column (and ``metrics.json`` key) of its mean
    - ``definition``: one line; ``undefined_when``: when the per-task value is None (NULL),
      or None if it is always defined
    - ``unit``: unit and range of the per-task value; ``value_type``: bool, int or float
    - ``direction``: ``"higher"`` or ``"lower"`` is better, or ``"neither"``
    - ``aggregation``: ``"mean"`` (NULLs skipped) or ``"mean_of_bool"`` (true = 1, false = 0)
    - ``source``: where the formula comes from
    - ``lane`` and ``measure``: for a candidate lane's ranking metric, the lane and the
      ``ir_measures`` measure name (``ir_measures.parse_measure`` reads it)
    - ``report_table``/``diff``: shown in the report's per-suite table / the run diff
    - ``display``: how the report and the diff print its mean (``Display``)

    Raises ``ValueError`` when a name or column is not a lower-case identifier (they are
    spliced into SQL) or a lane metric lacks its measure.
    """

    name: str
    column: str
    definition: str
    undefined_when: str | None
    unit: str
    value_type: ValueType
    direction: Direction
    aggregation: Aggregation
    source: str
    lane: Literal["context", "tool"] | None = None
    measure: str | None = None
    report_table: bool = False
    diff: bool = False
    display: Display = "percent"

    def __post_init__(self) -> None:
        for field in ("name", "column"):
            value = getattr(self, field)
            if not _IDENTIFIER.fullmatch(value):
                raise ValueError(f"metric {field} must be a lower-case identifier, got {value!r}")
        if self.display not in ("percent", "integer", "decimals2"):
            raise ValueError(f"metric {self.name!r}: display must be percent, integer or "
                             f"decimals2, got {self.display!r}")
        if (self.lane is None) != (self.measure is None):
            raise ValueError(f"metric {self.name!r}: lane and measure go together, "
                             f"got lane={self.lane!r}, measure={self.measure!r}")


_SET_SOURCE = ("set-based recall and precision (Manning, Raghavan & Schütze, Introduction "
               "to Information Retrieval, 2008, §8.3)")
_IR_MEASURES = "ir_measures {measure} (MacAvaney, Macdonald & Ounis, ECIR 2022), binary qrels"
_FRACTION = "fraction, [0, 1]"

# (column suffix, ir_measures measure, what it says, shown in the report's table)
_LANE_MEASURES = (
    ("recall_at_5", "R@5", "share of the gold ids found in the lane's first 5 candidates", False),
    ("ndcg_at_5", "nDCG@5", "nDCG of the lane's first 5 candidates (binary gain)", True),
    ("mrr", "RR", "1 / rank of the lane's first gold candidate (0 if none)", False),
)


class _SetCommon(TypedDict):
    """The ``Metric`` fields that set recall and precision share."""

    unit: str
    value_type: ValueType
    direction: Direction
    aggregation: Aggregation
    source: str


def _set_metrics(kind: Literal["context", "tool"]) -> tuple[Metric, Metric]:
    """Recall and precision of the exposed ``kind`` resources against the gold ones."""
    common: _SetCommon = {"unit": _FRACTION, "value_type": "float", "direction": "higher",
                          "aggregation": "mean", "source": _SET_SOURCE}
    return (
        Metric(f"{kind}_recall", f"{kind}_recall",
               definition=f"|exposed ∩ gold| / |gold| over {kind}s",
               undefined_when=f"the task has no gold {kind}", report_table=True, diff=True,
               **common),
        Metric(f"{kind}_precision", f"{kind}_precision",
               definition=f"|exposed ∩ gold| / |exposed| over {kind}s",
               undefined_when=f"no {kind} is exposed", report_table=kind == "context",
               **common),
    )


def _lane_metrics() -> tuple[Metric, ...]:
    return tuple(
        Metric(
            name=f"{lane}_lane_{suffix}", column=f"{lane}_lane_{suffix}",
            definition=f"{lane} candidate lane, ranked best first: {what}",
            undefined_when=f"the task has no gold {lane}",
            unit=_FRACTION, value_type="float", direction="higher", aggregation="mean",
            source=_IR_MEASURES.format(measure=measure), lane=lane, measure=measure,
            report_table=shown, display="percent" if measure == "R@5" else "decimals2",
        )
        for lane in ("context", "tool") for suffix, measure, what, shown in _LANE_MEASURES
    )


METRICS: tuple[Metric, ...] = (
    Metric("success", "success_rate",
           definition="retrieval_success: the task's verifier accepted the outcome (toy "
                      "calls, gold tools exposed, ...): a retrieval proxy for what an agent does "
                      "with the exposed set (`agent_success`)",
           undefined_when=None, unit="boolean", value_type="bool", direction="higher",
           aggregation="mean_of_bool", source="the suite's verifier (junction.verifiers)",
           report_table=True, diff=True),
    Metric("agent_success", "agent_success_rate",
           definition="a language-model agent shown the exposed set succeeded, graded by "
                      "the task's agent grader (a report names each suite's under "
                      "Definitions)",
           undefined_when="no agent ran on the task (outside the agent sample, or no grader "
                          "grades it)",
           unit="boolean", value_type="bool", direction="higher", aggregation="mean_of_bool",
           source="the task's agent grader (junction.agent.graders: its record's "
                  "description)",
           report_table=True, diff=True),
    Metric("agent_prompt_tokens", "agent_prompt_tokens",
           definition="prompt tokens the agent read (model tokenizer): system prompt, "
                      "exposed schemas and documents, the request",
           undefined_when="no agent ran on the task", unit="tokens, >= 0", value_type="int",
           direction="lower", aggregation="mean", source="llama.cpp usage (junction.agent.llm)",
           report_table=True, display="integer"),
    *_set_metrics("context"),
    *_set_metrics("tool"),
    Metric("pair_coverage", "pair_coverage",
           definition="every gold context and every gold tool are exposed together; on a "
                      "task with gold pairs (`gold_pairs`), every gold pair's document and "
                      "tool are exposed together",
           undefined_when="the task has no gold context or no gold tool", unit="boolean",
           value_type="bool", direction="higher", aggregation="mean_of_bool",
           source="Junction (pair_coverage, this module)", report_table=True, diff=True),
    Metric("budget_use", "budget_use",
           definition="tokens_used / the task's token budget",
           undefined_when="the task has no token budget (or a budget of 0)",
           unit="fraction, >= 0 (<= 1 when the selection fits)", value_type="float",
           direction="neither", aggregation="mean", source="Junction (junction.evaluate)",
           report_table=True, diff=True),
    Metric("tokens_used", "tokens_used",
           definition="visible tokens of the exposed set: context + tool schema tokens",
           undefined_when=None, unit="tokens, >= 0", value_type="int", direction="neither",
           aggregation="mean", source="Junction (each resource's token_cost, junction.tokens)",
           report_table=True, display="integer"),
    Metric("objective", "objective",
           definition="Σ u(r) over the exposed set + Σ [w(c,t) + w(t,c)] over its pairs",
           undefined_when=None, unit="utility units, unbounded", value_type="float",
           direction="higher", aggregation="mean",
           source="the joint objective (junction.select.problem module docstring)",
           report_table=True, diff=True, display="decimals2"),
    *_lane_metrics(),
)
"""Every per-task metric, in trace-column order; ``strategy_summary`` keeps this order."""


def format_value(display: Display, value: float | int | None) -> str:
    """``value`` printed as ``display`` says ("62%", "1002", "2.25"); "–" for None."""
    if value is None:
        return "–"
    if display == "percent":
        return f"{100 * value:.0f}%"
    if display == "integer":
        return f"{value:.0f}"
    return f"{value:.2f}"


def format_change(display: Display, change: float | None) -> str:
    """A change (after − before) printed as ``display`` says, signed: "+12 points" for a
    percent metric (percentage points), "+35" tokens, "+0.12"; "–" for None."""
    if change is None:
        return "–"
    if display == "percent":
        return f"{100 * change:+.0f} points"
    if display == "integer":
        return f"{change:+.0f}"
    return f"{change:+.2f}"


def format_duration(seconds: float | None) -> str:
    """A time with three significant digits, in s from 1 s up ("4.80 s", "123 s"; whole
    seconds from 1000 s) and in ms below ("250 ms", "0.500 ms"); "–" for None."""
    if seconds is None:
        return "–"
    if seconds == 0 or abs(seconds) >= 999.5:
        return f"{seconds:.0f} s"
    if abs(seconds) >= 0.9995:
        return f"{seconds:#.3g} s".replace(". s", " s")
    return f"{seconds * 1000:#.3g} ms".replace(". ms", " ms")


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
    gold_pairs: Sequence[tuple[str, str]] = (),
) -> bool | None:
    """Whether every gold context and every gold tool are exposed together; with
    ``gold_pairs`` ((context, tool) ids), whether both members of every pair are exposed.

    None when the task has no gold context or no gold tool (no pair to cover).
    """
    if not gold_contexts or not gold_tools:
        return None
    if gold_pairs:
        cs, ts = set(exposed_contexts), set(exposed_tools)
        return all(c in cs and t in ts for c, t in gold_pairs)
    return set(gold_contexts) <= set(exposed_contexts) and set(gold_tools) <= set(exposed_tools)


@dataclass(frozen=True)
class LaneRanking:
    """One lane of one query: ranked candidate ids (best first) and the gold ids."""

    query_id: str
    ranked_ids: Sequence[str]
    gold_ids: Sequence[str]


def lane_ranking_metrics(lanes: Sequence[LaneRanking]) -> dict[str, dict[str, float | None]]:
    """query_id -> {measure name: value} for the catalog's lane measures (``R@5``, ``nDCG@5``,
    ``RR``); all None for a query with no gold.

    Query ids must be unique. One ``ir_measures.iter_calc`` call for the whole batch.
    """
    names = list(dict.fromkeys(m.measure for m in METRICS if m.measure is not None))
    by_measure = {ir_measures.parse_measure(name): name for name in names}
    out: dict[str, dict[str, float | None]] = {
        lane.query_id: dict.fromkeys(names) for lane in lanes
    }
    qrels = [ir_measures.Qrel(lane.query_id, gid, 1) for lane in lanes for gid in lane.gold_ids]
    run = [
        ir_measures.ScoredDoc(lane.query_id, rid, float(-rank))
        for lane in lanes if lane.gold_ids for rank, rid in enumerate(lane.ranked_ids)
    ]
    if not qrels:
        return out
    for metric in ir_measures.iter_calc(list(by_measure), qrels, run):
        out[metric.query_id][by_measure[metric.measure]] = float(metric.value)
    # a query with gold but no candidates at all scores 0 (ir_measures skips it)
    for lane in lanes:
        if lane.gold_ids and not lane.ranked_ids:
            out[lane.query_id] = dict.fromkeys(names, 0.0)
    return out
