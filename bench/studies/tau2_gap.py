"""τ-Knowledge: what moves retrieval success toward the ceiling, against the strongest split.

Each candidate change is a catalogued pool rule (``junction.candidates.POOL_RULES``) or
strategy; this script runs them side by side in one process, through the code a
``junction bench`` run uses (``junction.evaluate.evaluate_batch``,
``LearnedStrategy.for_fold``, ``junction.evidence.verdicts.compare_strategies``):

- every (strategy, pool rule) given, on every task of the suite, at budget scales 0.5, 1
  and 2; a learned strategy cross-fitted (K folds) in each fold draw of ``--draws`` (the
  draw's seed: ``junction.learned.crossfit.fold_assignment``), one model per fold shared
  by the three scales; a strategy without a refit once per task;
- per scale, each column's retrieval success and its failed evaluations by cause
  (``junction.evidence.losses``), and the gold_minimal ceiling;
- per scale, each joint column against the strongest interaction-blind column of the
  whole table (highest rate at that scale, whichever pool rule it ran under): the
  corrected repeated-CV interval where a side is cross-fitted (``compare_strategies``).

Choosing among changes on draws 0-2 and then reading the chosen one's verdict on other
draws (``--draws 3,4,5``) without retuning is how a change chosen by luck shows.

Usage: ``python bench/studies/tau2_gap.py [--tau2-data PATH] [--draws 0,1,2] [--folds 5]
[--column learned_exact@bm25_named ...] [--json out.json]``; a column is
``strategy@pool_rule``, a learned one optionally ``learned_exact+link@...`` (its lane
models also read ``LINK_FEATURES``), ``learned_exact+weight@...`` (``WEIGHT_GRIDS``) or
``learned_exact+hybrid@...`` / ``+local@...`` (the fit's λ × τ search by that approximate
search of ``junction.learned.grid.SEARCHES`` instead of the exact one: ``junction bench
--fit-search``; each such column is also compared with the same column fitted exactly,
where that ran); another learned strategy (``learned_coverage``) is cross-fitted the same
way from its catalog record, ``learned_coverage+expected@...``, ``+any`` or ``+model``
changing its options (``COVERAGE_FLAGS``). Per scale it also prints what each column
exposes per task (tools, documents, tokens), beside ``gold_minimal``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from junction_datasets import tau2_banking as tb

from junction.evaluate import evaluate_batch
from junction.evidence.verdicts import compare_strategies
from junction.learned.crossfit import DEFAULT_FOLDS, CrossFitFold, fold_assignment
from junction.learned.grid import OPTIMAL_SEARCH, SEARCHES
from junction.registry import load
from junction.strategies.catalog import (
    interaction_blind_strategies,
    make_strategy,
    strategy_info,
)
from junction.strategies.learned import LearnedStrategy, TrainingSource
from junction.units import UnitSpec

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tau2_anchors import data_arguments

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: results.py
from results import write_results

SCALES = (0.5, 1.0, 2.0)
WEIGHT_GRIDS = (("lambdas", (0.0, 0.25, 1.0)), ("taus", (0.005, 0.01, 0.02, 0.05)),
                ("pair_weights", (1.0, 2.0, 4.0, 8.0)))
"""``+weight``: the pair weight searched with lam and tau, on lam and tau grids cut to
the values the 30 fits of ``learned_exact@bm25_named`` on draws 0-2 chose from (lam 0 or
1, tau 0.005-0.02), so the search stays as large as the default one (48 points, not 54)."""
DEFAULT_COLUMNS = ("fixed_split@bm25", "adaptive_split@bm25", "exact@bm25",
                   "learned_exact@bm25", "fixed_split@bm25_named",
                   "adaptive_split@bm25_named", "exact@bm25_named",
                   "learned_exact@bm25_named")


def _rows(records, column: str, seed: int, fold: int | None) -> list[dict]:
    return [{"suite": tb.SUITE, "budget_scale": r.budget_scale, "strategy": column,
             "seed": seed, "fold": fold, "task_id": r.task_id, "success": r.success,
             "loss_cause": r.loss_cause, "n_tools": len(r.exposed_tool_ids),
             "n_documents": len(r.exposed_context_ids), "tokens": r.tokens_used,
             "status": r.selection_status} for r in records]


COVERAGE_FLAGS = {
    "expected": ("objective", "expected_usable"), "any": ("explain", "any"),
    "likely": ("explain", "likely"), "lanes": ("relevance", "lanes"),
    "plain": ("relevance_options", (("features", ()), ("learner", "logistic"),
                                    ("propagate", "none"), ("iterations", 1),
                                    ("target", "gold"))),
    "stacked": ("relevance_options", (("features", ("prior", "knn")),
                                      ("learner", "logistic"), ("propagate", "stacked"),
                                      ("iterations", 1), ("target", "gold"))),
    "link": ("relevance_options", (("features", ("prior", "knn", "link")),
                                   ("learner", "logistic"), ("propagate", "none"),
                                   ("iterations", 1), ("target", "gold"))),
    "relevance": ("relevance_options", ()),
    "floors": ("floors", (0.0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5)),
}
"""``learned_coverage+flag@...`` (``junction.strategies.coverage``): ``+expected`` values a
usable tool p (the expected number of usable needed tools) instead of −log(1 − p); ``+any``
/ ``+likely`` which naming document explains a tool (default ``learned``); ``+lanes``
p(gold) from today's lane models alone, ``+plain`` from ``fit_relevance`` without
features, ``+stacked`` with the prior and knn features and stacked propagation, ``+link``
with the link features too (default: prior and knn), ``+relevance`` with
``fit_relevance``'s own default; ``+floors`` the floor chosen on training among eight."""


def run_column(tasks, column: str, draws: list[int], folds: int) -> tuple[list[dict], list]:
    """Trace rows of one ``strategy@pool`` column; for a learned one also each fit's
    (seconds, λ, τ)."""
    name, pool = column.split("@")
    name, *flags = name.split("+")
    rows: list[dict] = []
    fits: list[tuple[float, Any]] = []
    if strategy_info(name).role != "learned":
        strategy = make_strategy(name)
        for scale in SCALES:
            records, _ = evaluate_batch(tasks, strategy, UnitSpec(
                strategy=name, run_id="gap", seed=0, scale=scale, pool_limit=tb.POOL_LIMIT,
                pool=pool))
            rows += _rows(records, column, 0, None)
        return rows, fits
    search = next((f for f in flags if f in SEARCHES), OPTIMAL_SEARCH)
    source = TrainingSource(family=lambda suite: tb.SUITE, tasks=lambda family: [],
                            all_tasks=lambda family: tasks, cross_fitted=lambda family: True,
                            fit_search=search)
    ids = [t.task_id for t in tasks]
    for draw in draws:
        assignment = fold_assignment(ids, folds, draw)
        for fold in range(folds):
            if name in ("learned_exact", "learned_split"):
                unbound: Any = LearnedStrategy(name == "learned_exact", source, seed=0,
                                               link="link" in flags,
                                               grids=WEIGHT_GRIDS if "weight" in flags else ())
            else:  # another learned strategy: its catalog record, options per flag
                info = strategy_info(name)
                options = {**dict(info.options),
                           **dict(COVERAGE_FLAGS[f] for f in flags if f in COVERAGE_FLAGS)}
                unbound = load(info.factory)(training=source, **options)
            strategy = unbound.for_fold(CrossFitFold(draw, fold, folds))
            part = [t for t in tasks if assignment[t.task_id] == fold]
            t0 = time.perf_counter()
            model = strategy.model(tb.SUITE, tb.POOL_LIMIT, pool)
            fits.append((time.perf_counter() - t0, _chosen(model)))
            for scale in SCALES:
                records, _ = evaluate_batch(part, strategy, UnitSpec(
                    strategy=name, run_id="gap", seed=draw, scale=scale,
                    pool_limit=tb.POOL_LIMIT, repetition=draw, fold=fold, pool=pool))
                rows += _rows(records, column, draw, fold)
        print(f"  {column}: draw {draw} done", file=sys.stderr, flush=True)
    return rows, fits


def _chosen(model: Any) -> str:
    """What a fit chose: (λ, τ) of a learned utility, the floor of a coverage model."""
    if hasattr(model, "lam"):
        return f"(λ, τ) ({model.lam:g}, {model.tau:g})"
    return f"floor {model.floor:g}"


def _exact_column(column: str) -> str:
    """``column`` without its approximate-search flag (``learned_exact+hybrid@bm25`` ->
    ``learned_exact@bm25``)."""
    name, pool = column.split("@")
    name, *flags = name.split("+")
    return "+".join([name, *(f for f in flags if f not in SEARCHES)]) + "@" + pool


def _rate(rows, column: str, scale: float) -> float:
    got = [r["success"] for r in rows if r["strategy"] == column and r["budget_scale"] == scale]
    return sum(got) / len(got) if got else float("nan")


def _verdict(figures: dict, cell: list[dict], scale: float, a: str, b: str) -> None:
    """Print column ``a`` against column ``b`` on the rows ``cell`` of one budget scale
    (``compare_strategies``) and add it to ``figures["verdicts"]``; nothing when they share
    no task."""
    cmp = compare_strategies(cell, a, b)
    if cmp is None:
        return
    figures["verdicts"].append({"scale": scale, "a": a, "b": b,
                                **{k: getattr(cmp, k) for k in (
                                    "rate_a", "rate_b", "difference", "ci_low",
                                    "ci_high", "p_value", "test")}})
    print(f"  scale {scale:g}: {a:30s} {cmp.rate_a:.3f} vs {b:26s} "
          f"{cmp.rate_b:.3f}: {100 * cmp.difference:+5.1f} "
          f"[{100 * cmp.ci_low:+5.1f}, {100 * cmp.ci_high:+5.1f}] p {cmp.p_value:.3g} "
          f"({cmp.test})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", default="0,1,2", help="fold-draw seeds, comma-separated")
    parser.add_argument("--folds", type=int, default=DEFAULT_FOLDS)
    parser.add_argument("--column", action="append", help="strategy@pool_rule (repeatable)")
    parser.add_argument("--json", default=None, help="also write rows and figures here")
    args = data_arguments(parser.description, argv, parser)
    if args is None:
        return 2
    draws = [int(d) for d in args.draws.split(",")]
    columns = args.column or list(DEFAULT_COLUMNS)
    wall0 = time.perf_counter()
    tasks = tb.banking_suite(split="all").tasks
    rows: list[dict] = []
    fit_lines = []
    for column in columns:
        t0 = time.perf_counter()
        got, fits = run_column(tasks, column, draws, args.folds)
        rows += got
        line = f"{column}: {time.perf_counter() - t0:.0f} s"
        if fits:
            chosen = Counter(f[1] for f in fits)
            line += (f"; {len(fits)} fits, {sum(f[0] for f in fits) / len(fits):.1f} s mean; "
                     + ", ".join(f"{c} ×{n}" for c, n in sorted(chosen.items())))
        fit_lines.append(line)
    ceiling = make_strategy("gold_minimal")
    for scale in SCALES:
        records, _ = evaluate_batch(tasks, ceiling, UnitSpec(
            strategy="gold_minimal", run_id="gap", seed=0, scale=scale,
            pool_limit=tb.POOL_LIMIT))
        rows += _rows(records, "gold_minimal@-", 0, None)
    blind = [c for c in columns
             if c.split("@")[0].split("+")[0] in interaction_blind_strategies()]
    joint = [c for c in columns if c not in blind]
    print(f"τ-Knowledge, {len(tasks)} tasks, draws {args.draws} × K = {args.folds}; "
          "retrieval success (failed evaluations by cause)")
    causes = ("gold_does_not_fit", "tool_not_in_pool", "tool_not_selected",
              "document_not_in_pool", "document_not_selected")
    print(f"{'column':34s} " + " ".join(f"{f'scale {s:g}':>7s}" for s in SCALES)
          + "   scale-1 failures: fit/tool pool/tool sel/doc pool/doc sel")
    figures: dict = {"rates": {}, "verdicts": [], "fits": fit_lines}
    for column in [*columns, "gold_minimal@-"]:
        rates = [_rate(rows, column, s) for s in SCALES]
        figures["rates"][column] = dict(zip(map(str, SCALES), rates, strict=True))
        lost = Counter(r["loss_cause"] for r in rows
                       if r["strategy"] == column and r["budget_scale"] == 1.0
                       and not r["success"])
        print(f"{column:34s} " + " ".join(f"{x:7.3f}" for x in rates)
              + "   " + "/".join(str(lost.get(c, 0)) for c in causes))
    print("what each column exposes per task (means: tools / documents / tokens):")
    figures["exposed"] = {}
    for column in [*columns, "gold_minimal@-"]:
        cells = []
        for scale in SCALES:
            got = [r for r in rows if r["strategy"] == column and r["budget_scale"] == scale]
            mean = {k: sum(r[k] for r in got) / len(got) if got else float("nan")
                    for k in ("n_tools", "n_documents", "tokens")}
            figures["exposed"].setdefault(column, {})[str(scale)] = mean
            cells.append(f"{mean['n_tools']:5.1f} / {mean['n_documents']:4.1f} / "
                         f"{mean['tokens']:6.0f}")
        print(f"{column:34s} " + "   ".join(cells))
    print("each joint column against the strongest split at that scale, points [95%]:")
    for scale in SCALES:
        best = max(blind, key=lambda c: (_rate(rows, c, scale), c))
        cell = [r for r in rows if r["budget_scale"] == scale]
        for column in joint:
            _verdict(figures, cell, scale, column, best)
    exact_twins = [(c, _exact_column(c)) for c in joint
                   if _exact_column(c) != c and _exact_column(c) in columns]
    if exact_twins:
        print("each approximate-search column against the same column fitted exactly, "
              "points [95%]:")
    for scale in SCALES:
        cell = [r for r in rows if r["budget_scale"] == scale]
        for column, twin in exact_twins:
            _verdict(figures, cell, scale, column, twin)
    print("columns:")
    for line in fit_lines:
        print("  " + line)
    print(f"wall {time.perf_counter() - wall0:.0f} s")
    write_results(__file__, {**figures, "wall_s": round(time.perf_counter() - wall0)})
    if args.json:
        with open(args.json, "w") as f:
            json.dump({**figures, "rows": rows}, f, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
