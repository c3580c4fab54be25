"""Paired comparisons of binary outcomes between strategies (the report's headline).

Two strategies that ran on the same tasks give, per task, a pair of outcomes (0/1). Over the
shared tasks with a = both succeed, b = only A, c = only B, d = neither (n = a + b + c + d):

- the difference of success rates is (b − c) / n;
- its 95% interval is Newcombe's paired-difference score interval, method 10 of Newcombe,
  "Improving the comparison of two proportions based on paired data", Statistics in
  Medicine 17 (1998) 2635–2650: Wilson intervals of both rates (``scipy.stats.binomtest``
  ``proportion_ci(method="wilson")``) combined through the phi coefficient of the 2×2
  table, (ad − bc) / sqrt of the margins' product with ad − bc replaced by
  max(ad − bc − n/2, 0) when positive, as Newcombe defines it (phi = 0 when a margin is
  empty); Altman et al., *Statistics with Confidence* (2000), p. 52, works an example;
- the test is the exact McNemar test: a two-sided binomial test of b against b + c with
  p = 1/2 (``scipy.stats.binomtest``); p = 1 when there is no discordant pair.

A difference is *detected* only when the interval excludes 0 and p < ``ALPHA``; otherwise
the verdict is "no detectable difference", never a win.

An outcome column decides a (suite, budget scale) cell only when two of the compared
strategies share at least ``MIN_DECIDING_TASKS`` tasks with a value in it
(``outcome_tasks``); otherwise the cell falls back to the next of ``PRIMARY_OUTCOMES``
(verified success), and the passed-over column is reported on its own (``outcome_table``:
rates with Wilson intervals and n, "too few tasks to decide (n = 1)").
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scipy import stats

from junction.strategies.catalog import interaction_blind_strategies

__all__ = ["ALPHA", "MIN_DECIDING_TASKS", "PRIMARY_OUTCOMES",
           "PairedComparison", "paired_comparison", "wilson_interval", "primary_outcome",
           "outcome_tasks", "outcome_table", "too_few", "headline"]

ALPHA = 0.05
CONFIDENCE = 0.95
PRIMARY_OUTCOMES = ("agent_success", "success")
"""Trace columns tried in order for a suite's primary outcome: agent success where the
compared strategies share at least ``MIN_DECIDING_TASKS`` tasks with a value, else
verified success."""
MIN_DECIDING_TASKS = 20
"""The fewest shared tasks on which an outcome column may decide a cell. Why 20: below it
the exact McNemar test and Newcombe's interval can only detect near-total differences (at
n = 20 a 95% Wilson interval of a 50% rate is already [30%, 70%], and McNemar needs at
least 6 discordant pairs, all one way, for p < 0.05: 2 · 0.5⁶ = 0.031), so a verdict on
fewer tasks says almost nothing either way. A choice of this project, not a standard."""


@dataclass(frozen=True)
class PairedComparison:
    """A against B over ``n`` shared tasks: rates, difference A − B, interval, McNemar p."""

    n: int
    rate_a: float
    rate_b: float
    only_a: int
    only_b: int
    difference: float
    ci_low: float
    ci_high: float
    p_value: float

    @property
    def detected(self) -> bool:
        """True when the interval excludes 0 and the McNemar p-value is below ``ALPHA``."""
        return (self.ci_low > 0 or self.ci_high < 0) and self.p_value < ALPHA


def wilson_interval(successes: int, n: int) -> tuple[float, float]:
    """Wilson score 95% interval of ``successes / n`` (scipy); (0, 1) when n = 0."""
    if n == 0:
        return 0.0, 1.0
    ci = stats.binomtest(successes, n).proportion_ci(confidence_level=CONFIDENCE,
                                                     method="wilson")
    return float(ci.low), float(ci.high)


def paired_comparison(a: Sequence[bool], b: Sequence[bool]) -> PairedComparison:
    """Compare paired binary outcomes ``a[i]``, ``b[i]`` (same task i); see module docstring.

    Raises ``ValueError`` when the sequences differ in length or are empty.
    """
    if len(a) != len(b) or not a:
        raise ValueError(f"paired outcomes need equal, non-zero lengths, got {len(a)} and {len(b)}")
    n = len(a)
    both = sum(1 for x, y in zip(a, b) if x and y)
    only_a = sum(1 for x, y in zip(a, b) if x and not y)
    only_b = sum(1 for x, y in zip(a, b) if y and not x)
    neither = n - both - only_a - only_b
    p1, p2 = (both + only_a) / n, (both + only_b) / n
    l1, u1 = wilson_interval(both + only_a, n)
    l2, u2 = wilson_interval(both + only_b, n)
    margins = (both + only_a) * (only_b + neither) * (both + only_b) * (only_a + neither)
    # Newcombe's phi: ad − bc, shrunk by n/2 towards 0 when positive (0 if within n/2)
    cross = both * neither - only_a * only_b
    cross = cross - n / 2 if cross > n / 2 else (cross if cross < 0 else 0.0)
    phi = cross / math.sqrt(margins) if margins else 0.0
    diff = p1 - p2
    low = diff - math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2)
                               + (u2 - p2) ** 2))
    high = diff + math.sqrt(max(0.0, (p2 - l2) ** 2 - 2 * phi * (p2 - l2) * (u1 - p1)
                                + (u1 - p1) ** 2))
    discordant = only_a + only_b
    p_value = 1.0 if discordant == 0 else float(stats.binomtest(only_a, discordant, 0.5).pvalue)
    return PairedComparison(n=n, rate_a=p1, rate_b=p2, only_a=only_a, only_b=only_b,
                            difference=diff, ci_low=max(-1.0, low), ci_high=min(1.0, high),
                            p_value=min(1.0, p_value))


def _values(rows: Sequence[Mapping[str, Any]], column: str) -> dict[str, dict[tuple, bool]]:
    """strategy -> {(seed, task_id): outcome} over the rows with a value in ``column``."""
    by_strategy: dict[str, dict[tuple, bool]] = {}
    for row in rows:
        if row.get(column) is not None:
            by_strategy.setdefault(row["strategy"], {})[(row["seed"], row["task_id"])] = \
                bool(row[column])
    return by_strategy


def outcome_tasks(rows: Sequence[Mapping[str, Any]], column: str) -> int:
    """The most tasks (seed, task_id) that any two strategies of ``rows`` share with a
    non-NULL ``column``; 0 when fewer than two strategies have a value."""
    by_strategy = list(_values(rows, column).values())
    return max((len(a.keys() & b.keys()) for i, a in enumerate(by_strategy)
                for b in by_strategy[i + 1:]), default=0)


def primary_outcome(rows: Sequence[Mapping[str, Any]]) -> str:
    """The first of ``PRIMARY_OUTCOMES`` whose ``outcome_tasks`` reaches
    ``MIN_DECIDING_TASKS``; else the last one that some row holds a value for (verified
    success), whose verdict then says it has too few tasks.

    Raises ``ValueError`` when no row has a value in any of them."""
    present = [c for c in PRIMARY_OUTCOMES if any(row.get(c) is not None for row in rows)]
    if not present:
        raise ValueError(f"no row has any of the outcome columns {PRIMARY_OUTCOMES}")
    for column in present:
        if outcome_tasks(rows, column) >= MIN_DECIDING_TASKS:
            return column
    return present[-1]


def too_few(n: int) -> str:
    """The words for a cell below ``MIN_DECIDING_TASKS``: "too few tasks to decide (n = 1)"."""
    return f"too few tasks to decide (n = {n})"


def outcome_table(rows: Sequence[Mapping[str, Any]], column: str) -> list[dict[str, Any]]:
    """Per suite, budget scale and strategy with a value in ``column`` (a 0/1 outcome):
    {suite, budget_scale, strategy, n, successes, rate, ci_low, ci_high, decides}, sorted.

    ``rate`` is successes / n over the tasks with a value; ``ci_low``/``ci_high`` its Wilson
    95% interval (``wilson_interval``); ``decides`` is n >= ``MIN_DECIDING_TASKS``."""
    groups: dict[tuple[str, float], list[Mapping[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["suite"], float(row["budget_scale"])), []).append(row)
    out = []
    for (suite, scale), group in sorted(groups.items()):
        for strategy, values in sorted(_values(group, column).items()):
            n, k = len(values), sum(values.values())
            low, high = wilson_interval(k, n)
            out.append({"suite": suite, "budget_scale": scale, "strategy": strategy, "n": n,
                        "successes": k, "rate": k / n, "ci_low": low, "ci_high": high,
                        "decides": n >= MIN_DECIDING_TASKS})
    return out


def _verdict(best: str, other: str, cmp: PairedComparison) -> str:
    points = (f"{100 * cmp.difference:+.0f} points "
              f"[{100 * cmp.ci_low:+.0f}, {100 * cmp.ci_high:+.0f}]")
    if cmp.detected:
        return f"{best} beats {other} by {points}"
    return f"no detectable difference between {best} and {other} ({points})"


def headline(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per suite and budget scale: the best strategy and its paired comparisons.

    ``rows``: trace rows with ``suite``, ``budget_scale``, ``strategy``, ``seed``, ``task_id``
    and the outcome columns. The outcome is the suite's ``primary_outcome``; tasks are
    paired on (seed, task_id) and rows with a NULL outcome are left out. The best strategy
    has the highest rate (ties: every tied strategy is listed, one that uses interactions
    first, then by name; the first is compared).
    Returns one dict per (suite, budget scale): suite, budget_scale, outcome,
    passed_over ({column: ``outcome_tasks``} for each earlier column of
    ``PRIMARY_OUTCOMES`` that had values but too few shared tasks), rates
    {strategy: (rate, tasks)}, best (tied names), comparisons [{other, role, comparison,
    verdict}] (role "interaction-blind best" for the best of the catalog's
    ``interaction_blind_strategies`` unless the best is one of them, else "reference"; that
    one first) and sentence (on the first comparison), sorted by suite and scale.
    """
    groups: dict[tuple[str, float], list[Mapping[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["suite"], float(row["budget_scale"])), []).append(row)
    blind_names = interaction_blind_strategies()
    out = []
    for (suite, scale), group in sorted(groups.items()):
        outcome = primary_outcome(group)
        passed_over = {c: outcome_tasks(group, c)
                       for c in PRIMARY_OUTCOMES[:PRIMARY_OUTCOMES.index(outcome)]
                       if any(row.get(c) is not None for row in group)}
        by_strategy = _values(group, outcome)
        rates = {s: (sum(v.values()) / len(v), len(v)) for s, v in sorted(by_strategy.items())}
        if not rates:
            continue
        top = max(r for r, _ in rates.values())
        # a tie prefers a strategy that uses interactions, so the headline compares it
        # with the interaction-blind best
        tied = sorted((s for s, (r, _) in rates.items() if math.isclose(r, top)),
                      key=lambda s: (s in blind_names, s))
        best = tied[0]
        # when the best itself ignores interactions, no comparison plays that role
        blind = [s for s in rates if s in blind_names and best not in blind_names]
        blind_best = max(blind, key=lambda s: (rates[s][0], -blind.index(s))) if blind else None
        comparisons = []
        for other in sorted(rates, key=lambda s: (s != blind_best, s)):
            if other == best:
                continue
            shared = sorted(set(by_strategy[best]) & set(by_strategy[other]))
            if not shared:
                continue
            cmp = paired_comparison([by_strategy[best][k] for k in shared],
                                    [by_strategy[other][k] for k in shared])
            comparisons.append({
                "other": other,
                "role": "interaction-blind best" if other == blind_best else "reference",
                "comparison": cmp, "verdict": _verdict(best, other, cmp),
            })
        out.append({"suite": suite, "budget_scale": scale, "outcome": outcome,
                    "passed_over": passed_over, "rates": rates,
                    "best": tied, "comparisons": comparisons,
                    "sentence": _sentence(suite, scale, outcome, tied, rates, comparisons)})
    return out


def _sentence(suite: str, scale: float, outcome: str, tied: list[str],
              rates: Mapping[str, tuple[float, int]], comparisons: list[dict[str, Any]]) -> str:
    where = f"on {suite} (budget × {scale:g}, {outcome})"
    rate = rates[tied[0]][0]
    if len(tied) > 1:
        lead = f"{' and '.join(tied)} tie for best {where} at {rate:.2f}"
    else:
        lead = f"{tied[0]} is best {where} at {rate:.2f}"
    if not comparisons:
        return lead + "; no other strategy shares its tasks."
    first = comparisons[0]
    n = first["comparison"].n
    return f"{lead}; {first['verdict']} over {n} shared task{'s' if n != 1 else ''}."
