"""τ-Knowledge cross-fitted: learned_exact − learned_split with the refit in the interval,
and how sensitive that verdict is.

Every task of the suite is evaluated in each of R repetitions (fold draws, seeds 0..R−1)
by a model fitted on the other K − 1 folds (``junction.learned.crossfit``), through the
same code a cross-fitted ``junction bench`` run uses (``LearnedStrategy.for_fold``,
``junction.evaluate.evaluate_batch``, ``junction.evidence.crossfit``). Printed side by
side in one run, per configuration:

- token counter: ``approx-qwen2.5`` (today's ``DEFAULT_TOKEN_COUNTER``) and
  ``approx-gemma3`` (the rule the project used before, commit 6dac5e7, reproduced below):
  every document and schema is priced differently, so the BM25 pools' prices, the fit and
  the selections all move;
- τ grid: 0.02/0.05/0.1/0.2 (the grid before it reached 0.005; the fit picked its
  smallest value, 0.02) and the same extended below, 0.005/0.01/0.02/...; the one that is
  ``junction.learned.utility.TAU_GRID`` today is marked ``(default)``;
- budget scale 0.5, 1, 2 and subset (all tasks; without the ten tasks whose gold is
  disputed upstream, ``tau2_banking.DISPUTED_TASKS``).

Each row: rates of A and B, the difference in points with the corrected repeated
cross-validation 95% interval, p, P(A > B) (baycomp) and in how many repetitions the
repetition alone detects the same sign; then where the sign changes. Also the fits'
seconds (mean, max) and the λ, τ each fit chose.

Usage: ``python bench/studies/tau2_crossfit.py [--tau2-data PATH] [--repetitions 3] [--folds 5]
[--counter approx-qwen2.5 --counter approx-gemma3] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
import time
from collections import Counter
from fractions import Fraction
from pathlib import Path
from typing import Any

from junction_datasets import tau2_banking as tb

from junction.evaluate import evaluate_batch
from junction.evidence.crossfit import cross_fitted_verdicts
from junction.learned import utility
from junction.learned.crossfit import DEFAULT_FOLDS, CrossFitFold, fold_assignment
from junction.strategies.learned import LearnedStrategy, TrainingSource
from junction.text import CJK_CHARS, THAI_CHARS
from junction.tokens import DEFAULT_TOKEN_COUNTER
from junction.units import UnitSpec

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tau2_anchors import data_arguments

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: results.py
from results import write_results

SCALES = (0.5, 1.0, 2.0)
PAIR = ("learned_exact", "learned_split")


class GemmaFittedCounter:
    """The token counter of commit 6dac5e7 (``approx-gemma3``, fitted to Gemma 3's
    tokenizer), reproduced for this comparison: runs of CJK, Thai, other word characters
    and punctuation cost ceil(3/5 · n), ceil(n/3), ceil(n/8) and ceil(n/3) tokens."""

    name = "approx-gemma3"
    _run = re.compile(rf"([{CJK_CHARS}]+)|([{THAI_CHARS}]+)|([^\W{CJK_CHARS}{THAI_CHARS}]+)"
                      r"|([^\w\s]+)")
    _rates = (Fraction(3, 5), Fraction(1, 3), Fraction(1, 8), Fraction(1, 3))

    def count(self, text: str) -> int:
        total = 0
        for groups in self._run.findall(text):
            for run, rate in zip(groups, self._rates, strict=False):
                if run:
                    total += math.ceil(len(run) * rate)
        return total


COUNTERS = {DEFAULT_TOKEN_COUNTER.name: DEFAULT_TOKEN_COUNTER,
            GemmaFittedCounter.name: GemmaFittedCounter()}


GRID_BEFORE = (0.02, 0.05, 0.1, 0.2)
"""The τ grid before it was extended below 0.02 (the fit picked its smallest value, 0.02)."""
GRID_EXTENDED = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2)
"""The same grid extended below 0.02."""


def _grids() -> dict[str, tuple[float, ...]]:
    """The two τ grids compared; the one ``utility.TAU_GRID`` is today is marked."""
    out: dict[str, tuple[float, ...]] = {}
    for name, grid in (("0.02-0.2", GRID_BEFORE), ("0.005-0.2", GRID_EXTENDED)):
        out[name + (" (default)" if tuple(utility.TAU_GRID) == grid else "")] = grid
    return out


def run_configuration(tasks, repetitions: int, folds: int, label: str):
    """Trace rows of both learned strategies on every task, every repetition and scale,
    and the fits' (seconds, λ, τ)."""
    source = TrainingSource(family=lambda suite: tb.SUITE, tasks=lambda family: [],
                            all_tasks=lambda family: tasks, cross_fitted=lambda family: True)
    rows: list[dict[str, Any]] = []
    fits: list[tuple[float, float, float]] = []
    ids = [t.task_id for t in tasks]
    for rep in range(repetitions):
        assignment = fold_assignment(ids, folds, rep)
        for fold in range(folds):
            cell = CrossFitFold(rep, fold, folds)
            part = [t for t in tasks if assignment[t.task_id] == fold]
            strategies = {name: LearnedStrategy(name == PAIR[0], source).for_fold(cell)
                          for name in PAIR}
            t0 = time.perf_counter()
            model = strategies[PAIR[0]].model(tb.SUITE, tb.POOL_LIMIT)
            fits.append((time.perf_counter() - t0, model.lam, model.tau))
            for name, strategy in strategies.items():
                for scale in SCALES:
                    records, _ = evaluate_batch(part, strategy, UnitSpec(
                        strategy=name, run_id=label, seed=rep, scale=scale,
                        pool_limit=tb.POOL_LIMIT, repetition=rep, fold=fold))
                    rows.extend({"suite": tb.SUITE, "budget_scale": scale, "strategy": name,
                                 "repetition": rep, "fold": fold, "task_id": r.task_id,
                                 "success": r.success} for r in records)
        print(f"  {label}: repetition {rep} done", file=sys.stderr, flush=True)
    return rows, fits


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--folds", type=int, default=DEFAULT_FOLDS)
    parser.add_argument("--counter", action="append", choices=sorted(COUNTERS))
    parser.add_argument("--grid", action="append", choices=("before", "extended"),
                        help="τ grids to compare (default: both)")
    parser.add_argument("--json", default=None, help="also write the table as JSON here")
    args = data_arguments(parser.description, argv, parser)
    if args is None:
        return 2
    counters = args.counter or list(COUNTERS)
    disputed = sorted(f"{tb.SUITE}-{t}" for t in tb.DISPUTED_TASKS)
    table, fit_lines = [], []
    wall0 = time.perf_counter()
    for counter_name in counters:
        built = tb.banking_suite(split="all", counter=COUNTERS[counter_name])
        tasks = built.tasks
        for grid_name, grid in _grids().items():
            if args.grid and ("before" if grid == GRID_BEFORE else "extended") not in args.grid:
                continue
            saved = utility.TAU_GRID
            utility.TAU_GRID = grid  # the fit reads the module's grid
            try:
                label = f"{counter_name}, τ grid {grid_name}"
                rows, fits = run_configuration(tasks, args.repetitions, args.folds, label)
            finally:
                utility.TAU_GRID = saved
            secs = [f[0] for f in fits]
            chosen = Counter((f[1], f[2]) for f in fits)
            fit_lines.append(
                f"{label}: {len(fits)} fits, {statistics.mean(secs):.1f} s mean, "
                f"{max(secs):.1f} s max; (λ, τ) chosen: "
                + ", ".join(f"({lam:g}, {tau:g}) ×{n}" for (lam, tau), n in sorted(chosen.items())))
            for v in cross_fitted_verdicts(rows, {tb.SUITE: disputed}):
                table.append({"counter": counter_name, "tau_grid": grid_name, **v})
    print(f"τ-Knowledge cross-fitted, {len(tasks)} tasks, R = {args.repetitions} × K = "
          f"{args.folds}; {PAIR[0]} − {PAIR[1]}, retrieval success, points "
          "[corrected 95%]:")
    print(f"{'counter':15s} {'τ grid':26s} {'scale':>5s} {'subset':11s} {'A':>6s} {'B':>6s} "
          f"{'difference [95%]':>24s} {'p':>7s} {'P(A>B)':>7s} holds")
    for r in table:
        print(f"{r['counter']:15s} {r['tau_grid']:26s} {r['budget_scale']:5g} {r['subset']:11s} "
              f"{r['rate_a']:6.3f} {r['rate_b']:6.3f} "
              f"{100 * r['difference']:+7.1f} [{100 * r['ci_low']:+6.1f}, "
              f"{100 * r['ci_high']:+6.1f}] {r['p_value']:7.3g} {r['p_a_better']:7.3f} "
              f"{r['holds']} of {r['repetitions']}")
    signs = {(r["counter"], r["tau_grid"], r["budget_scale"], r["subset"]):
             (r["difference"] > 0) - (r["difference"] < 0) for r in table}
    if len(set(signs.values())) > 1:
        print("the sign changes: " + "; ".join(
            f"{k[0]}, {k[1]}, scale {k[2]:g}, {k[3]}: {'+' if s > 0 else '−' if s < 0 else '0'}"
            for k, s in signs.items() if s != max(set(signs.values()), key=list(
                signs.values()).count)))
    else:
        print("the sign is the same in every configuration")
    print("fits:")
    for line in fit_lines:
        print("  " + line)
    print(f"wall {time.perf_counter() - wall0:.0f} s")
    write_results(__file__, {"table": table, "fits": fit_lines,
                             "wall_s": round(time.perf_counter() - wall0)})
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"table": table, "fits": fit_lines}, f, indent=2, sort_keys=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
