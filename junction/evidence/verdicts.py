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

Where either strategy is cross-fitted (its rows carry a ``fold``: a learned model refitted
per fold, every task evaluated once per repetition), the interval counts the refits: the
corrected repeated cross-validation t-test (``corrected_cv_interval``) on the fold scores,
each side's mean outcome over one (repetition, fold)'s tasks; a strategy without a refit
has one outcome per task, paired on each fold's tasks. That comparison has ``test`` =
``corrected_cv``; the Newcombe/McNemar one ``mcnemar``.

A difference is *detected* only when the interval excludes 0 and p < ``ALPHA``; otherwise
the verdict is "no detectable difference", never a win.

The headline of a (suite, budget scale) cell compares the best *joint* strategy with the
best *interaction-blind* one that ran there, whichever it is; without a joint strategy, the
best of all. A strategy's side is its catalog record's (``StrategyInfo.headline_side``:
``sees_interactions`` is joint; ``ranks_apart``, or a joint selector without interaction
terms, is interaction-blind); a strategy of neither side is compared on its own.

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

import numpy as np
from baycomp import CorrelatedTTest
from scipy import stats

from junction.strategies.catalog import STRATEGIES, interaction_blind_strategies

__all__ = [
    "ALPHA",
    "MIN_DECIDING_TASKS",
    "PRIMARY_OUTCOMES",
    "PairedComparison",
    "compare_strategies",
    "corrected_cv_interval",
    "headline",
    "outcome_table",
    "outcome_tasks",
    "paired_comparison",
    "primary_outcome",
    "too_few",
    "verdict_words",
    "wilson_interval",
]

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


def corrected_cv_interval(a: Sequence[float], b: Sequence[float], runs: int,
                          level: float = CONFIDENCE) -> dict[str, float]:
    """The corrected repeated cross-validation t-test on fold scores ``a`` and ``b`` (each
    K · ``runs`` values, repetition-major): difference A − B, its ``level`` interval,
    two-sided p, ``p_a_better`` and ``df``.

    Nadeau and Bengio 2003, "Inference for the generalization error"; Bouckaert and Frank
    2004: the variance of the K · R fold differences times (1/(K·R) + 1/(K − 1)), Student t
    with K·R − 1 degrees of freedom; the mean, corrected variance and degrees of freedom
    are baycomp's (``baycomp.CorrelatedTTest.compute_statistics``, Corani and Benavoli
    2015), the quantiles scipy's, and ``p_a_better`` the posterior probability that
    A − B > 0.

    Raises ``ValueError`` for unequal lengths, fewer than two scores, a length that
    ``runs`` does not divide, or a single fold per run (no correction is defined).
    """
    x, y = np.asarray(b, dtype=float), np.asarray(a, dtype=float)
    if x.shape != y.shape or x.ndim != 1 or len(x) < 2:
        raise ValueError(f"fold scores: need two equal-length vectors of at least 2 values, "
                         f"got {len(a)} and {len(b)}")
    if runs < 1 or len(x) % runs:
        raise ValueError(f"fold scores: {len(x)} values do not divide into {runs} runs")
    if len(x) // runs < 2:
        raise ValueError("fold scores: the correction needs at least 2 folds per run")
    mean, var, df = CorrelatedTTest.compute_statistics(x, y, runs)  # mean of y - x = A - B
    mean, var = float(mean), float(var)
    if var > 0:
        scale = math.sqrt(var)
        half = float(stats.t.ppf(0.5 + level / 2, df)) * scale
        p = float(2 * stats.t.sf(abs(mean) / scale, df))
        p_better = float(1 - stats.t.cdf(0, df, mean, scale))
    else:  # every fold difference equal: no spread to estimate
        half, p = 0.0, 1.0 if mean == 0 else 0.0
        p_better = 1.0 if mean > 0 else (0.5 if mean == 0 else 0.0)
    return {"difference": mean, "ci_low": mean - half, "ci_high": mean + half,
            "p_value": p, "p_a_better": p_better, "df": int(df)}


@dataclass(frozen=True)
class PairedComparison:
    """A against B over ``n`` shared tasks: rates, difference A − B, interval, p.

    ``test``: ``mcnemar`` (Newcombe's interval, the exact McNemar p; ``only_a``/``only_b``
    count the discordant tasks) or ``corrected_cv`` (the corrected repeated-CV t-test over
    ``repetitions`` × ``folds`` fold scores; ``only_a``/``only_b`` count the discordant
    evaluations, ``p_a_better`` is baycomp's posterior P(A − B > 0))."""

    n: int
    rate_a: float
    rate_b: float
    only_a: int
    only_b: int
    difference: float
    ci_low: float
    ci_high: float
    p_value: float
    test: str = "mcnemar"
    repetitions: int | None = None
    folds: int | None = None
    p_a_better: float | None = None

    @property
    def detected(self) -> bool:
        """True when the interval excludes 0 and the p-value is below ``ALPHA``."""
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
    both = sum(1 for x, y in zip(a, b, strict=True) if x and y)
    only_a = sum(1 for x, y in zip(a, b, strict=True) if x and not y)
    only_b = sum(1 for x, y in zip(a, b, strict=True) if y and not x)
    neither = n - both - only_a - only_b
    p1, p2 = (both + only_a) / n, (both + only_b) / n
    l1, u1 = wilson_interval(both + only_a, n)
    l2, u2 = wilson_interval(both + only_b, n)
    margins = (both + only_a) * (only_b + neither) * (both + only_b) * (only_a + neither)
    # Newcombe's phi: ad − bc, shrunk by n/2 towards 0 when positive (0 if within n/2)
    cross: float = both * neither - only_a * only_b
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


def _folds(rows: Sequence[Mapping[str, Any]], column: str) -> dict[str, dict[tuple, int]]:
    """strategy -> {(seed, task_id): fold} over the rows with a fold and a value in
    ``column`` (a cross-fitted strategy's rows; the seed is the repetition)."""
    out: dict[str, dict[tuple, int]] = {}
    for row in rows:
        if row.get(column) is not None and row.get("fold") is not None:
            out.setdefault(row["strategy"], {})[(row["seed"], row["task_id"])] = int(row["fold"])
    return out


def _cross_fitted(va: Mapping[tuple, bool], vb: Mapping[tuple, bool],
                  fa: Mapping[tuple, int], fb: Mapping[tuple, int]) -> PairedComparison | None:
    """A against B on the corrected repeated-CV t-test (module docstring). ``fa``/``fb``:
    (repetition, task) -> fold of each side, empty for a side without a refit, whose one
    outcome per task (its first seed's) is paired with every repetition. The folds are
    A's where A has them, else B's. None when the design is not balanced (repetitions
    with different fold counts, or under two folds)."""
    def by_task(v: Mapping[tuple, bool]) -> dict[str, bool]:
        out: dict[str, bool] = {}
        for key in sorted(v):
            out.setdefault(key[1], v[key])
        return out

    folds = fa or fb
    ta, tb = by_task(va), by_task(vb)
    keyed_a, keyed_b = bool(fa), bool(fb)
    cells: dict[tuple[int, int], tuple[list[bool], list[bool]]] = {}
    pairs: list[tuple[bool, bool]] = []
    tasks = set()
    for key in sorted(folds):
        a = va.get(key) if keyed_a else ta.get(key[1])
        b = vb.get(key) if keyed_b else tb.get(key[1])
        if a is None or b is None:
            continue
        xa, xb = cells.setdefault((key[0], folds[key]), ([], []))
        xa.append(a)
        xb.append(b)
        pairs.append((a, b))
        tasks.add(key[1])
    reps = sorted({r for r, _ in cells})
    per_rep = [sum(1 for r, _ in cells if r == rep) for rep in reps]
    if not reps or min(per_rep) < 2 or len(set(per_rep)) != 1:
        return None
    order = sorted(cells)
    test = corrected_cv_interval([float(np.mean(cells[c][0])) for c in order],
                                 [float(np.mean(cells[c][1])) for c in order], runs=len(reps))
    n_eval = len(pairs)
    return PairedComparison(
        n=len(tasks), rate_a=sum(a for a, _ in pairs) / n_eval,
        rate_b=sum(b for _, b in pairs) / n_eval,
        only_a=sum(a and not b for a, b in pairs), only_b=sum(b and not a for a, b in pairs),
        difference=test["difference"], ci_low=max(-1.0, test["ci_low"]),
        ci_high=min(1.0, test["ci_high"]), p_value=min(1.0, test["p_value"]),
        test="corrected_cv", repetitions=len(reps), folds=per_rep[0],
        p_a_better=test["p_a_better"])


def compare_strategies(rows: Sequence[Mapping[str, Any]], a: str, b: str,
                       column: str = "success") -> PairedComparison | None:
    """``a`` against ``b`` on ``column`` over ``rows`` (one suite and budget scale: trace
    rows with strategy, seed, task_id, the column and, on a cross-fitted suite, fold).

    Where either side has folds: ``_cross_fitted``'s corrected repeated-CV comparison over
    every repetition (the fold draw of the side with folds, ``a``'s when both have them);
    otherwise, or where that design is unbalanced, ``paired_comparison`` over the (seed,
    task_id) keys both share. None when they share no task."""
    values = _values(rows, column)
    va, vb = values.get(a, {}), values.get(b, {})
    folds = _folds(rows, column)
    if folds.get(a) or folds.get(b):
        cmp = _cross_fitted(va, vb, folds.get(a, {}), folds.get(b, {}))
        if cmp is not None:
            return cmp
    shared = sorted(set(va) & set(vb))
    if shared and (folds.get(a) or folds.get(b)):  # a repetition repeats the tasks: the first
        shared = [k for k in shared if k[0] == shared[0][0]]
    if not shared:
        return None
    return paired_comparison([va[k] for k in shared], [vb[k] for k in shared])


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


def verdict_words(best: str, other: str, cmp: PairedComparison) -> tuple[str, str]:
    """(status, words) of ``best`` against ``other``: ("detected", "A beats B by +12 points
    [+3, +20]"), the better named first (so B beats A where A − B is detected below 0,
    with the difference and interval turned round), or ("none", "no detectable difference
    between A and B (+2 points [−5, +9])")."""
    if cmp.detected and cmp.difference < 0:
        points = (f"{-100 * cmp.difference:+.0f} points "
                  f"[{-100 * cmp.ci_high:+.0f}, {-100 * cmp.ci_low:+.0f}]")
        return "detected", f"{other} beats {best} by {points}"
    points = (f"{100 * cmp.difference:+.0f} points "
              f"[{100 * cmp.ci_low:+.0f}, {100 * cmp.ci_high:+.0f}]")
    if cmp.detected:
        return "detected", f"{best} beats {other} by {points}"
    return "none", f"no detectable difference between {best} and {other} ({points})"


def _rates(values: Mapping[str, Mapping[tuple, bool]]) -> dict[str, tuple[float, int]]:
    """strategy -> (success rate, evaluations: (seed, task) keys), sorted by name."""
    return {s: (sum(v.values()) / len(v), len(v)) for s, v in sorted(values.items()) if v}


def headline(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per suite and budget scale: the best joint strategy against the best
    interaction-blind one, and against every other strategy.

    ``rows``: trace rows with ``suite``, ``budget_scale``, ``strategy``, ``seed``,
    ``task_id``, the outcome columns and, on a cross-fitted suite, ``fold`` (every
    repetition's rows). The outcome is the cell's ``primary_outcome``; rows with a NULL
    outcome are left out. A strategy's rate is its mean over its evaluations (a
    cross-fitted one: every repetition). ``best``: the joint strategies (catalog
    ``headline_side`` "joint") at the highest rate, by name; when no joint strategy ran, every
    strategy at the highest rate (one that uses interactions first, then by name). The
    first is compared (``compare_strategies``: corrected repeated-CV where either side is
    cross-fitted, else Newcombe/McNemar), first with the best of the catalog's
    ``interaction_blind_strategies`` (``headline_side`` "interaction-blind"; the highest
    rate, then by name; role
    "interaction-blind best", unless the best is itself interaction-blind), then with every
    other (role "reference").
    Returns one dict per (suite, budget scale): suite, budget_scale, outcome, best_kind
    ("joint" or "any"), passed_over ({column: ``outcome_tasks``} for each earlier column of
    ``PRIMARY_OUTCOMES`` that had values but too few shared tasks), rates {strategy:
    (rate, tasks)}, best (tied names), comparisons [{other, role, comparison, verdict}]
    and sentence (on the first comparison), sorted by suite and scale.
    """
    groups: dict[tuple[str, float], list[Mapping[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["suite"], float(row["budget_scale"])), []).append(row)
    blind_names = interaction_blind_strategies()
    joint_names = {n for n in STRATEGIES.names() if STRATEGIES[n].headline_side == "joint"}
    out = []
    for (suite, scale), group in sorted(groups.items()):
        outcome = primary_outcome(group)
        passed_over = {c: outcome_tasks(group, c)
                       for c in PRIMARY_OUTCOMES[:PRIMARY_OUTCOMES.index(outcome)]
                       if any(row.get(c) is not None for row in group)}
        rates = _rates(_values(group, outcome))
        if not rates:
            continue
        joint = [s for s in rates if s in joint_names]
        pool = joint or list(rates)
        top = max(rates[s][0] for s in pool)
        # without a joint strategy, a tie prefers one that uses interactions
        tied = sorted((s for s in pool if math.isclose(rates[s][0], top)),
                      key=lambda s: (s in blind_names, s))
        best = tied[0]
        blind = [s for s in rates if s in blind_names and best not in blind_names]
        blind_best = min(blind, key=lambda s: (-rates[s][0], s)) if blind else None
        comparisons = []
        for other in sorted(rates, key=lambda s: (s != blind_best, s)):
            if other == best:
                continue
            cmp = compare_strategies(group, best, other, outcome)
            if cmp is None:
                continue
            comparisons.append({
                "other": other,
                "role": "interaction-blind best" if other == blind_best else "reference",
                "comparison": cmp, "verdict": verdict_words(best, other, cmp)[1],
            })
        kind = "joint" if joint else "any"
        out.append({"suite": suite, "budget_scale": scale, "outcome": outcome,
                    "best_kind": kind, "passed_over": passed_over, "rates": rates,
                    "best": tied, "comparisons": comparisons,
                    "sentence": _sentence(suite, scale, outcome, tied, kind, rates,
                                          comparisons)})
    return out


def _sentence(suite: str, scale: float, outcome: str, tied: list[str], kind: str,
              rates: Mapping[str, tuple[float, int]], comparisons: list[dict[str, Any]]) -> str:
    where = f"on {suite} (budget × {scale:g}, {outcome})"
    rate = rates[tied[0]][0]
    what = "best joint strategy" if kind == "joint" else "best"
    if len(tied) > 1:
        lead = f"{' and '.join(tied)} tie for {what} {where} at {rate:.2f}"
    else:
        lead = f"{tied[0]} is {'the ' if kind == 'joint' else ''}{what} {where} at {rate:.2f}"
    if not comparisons:
        return lead + "; no other strategy shares its tasks."
    first = comparisons[0]
    cmp = first["comparison"]
    n = cmp.n
    how = (f" (corrected repeated-CV interval, {cmp.repetitions} × {cmp.folds} folds)"
           if cmp.test == "corrected_cv" else "")
    return f"{lead}; {first['verdict']} over {n} shared task{'s' if n != 1 else ''}{how}."
