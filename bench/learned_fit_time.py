"""Learned fit time on τ-Knowledge (issue 39): the fit before and after its caches.

Times ``junction.learned.utility.fit_learned_utility`` on the tau2-banking suite
(``$JUNCTION_TAU2_DATA`` or ``--tau2-data PATH``; every task, ``split="all"``, the suite's
pool limit), on the training tasks of cross-fitting folds (``junction.learned.crossfit.
fold_assignment``, K = ``--folds``, repetition 0: fold k's training tasks are the tasks
outside fold k). Printed, in one process:

1. before: the fit as it was at ``--before-rev`` (default 8740878, the last commit before
   the caches; its ``junction/learned/{features,model,utility}.py`` read with ``git show``
   and run beside today's other modules) on fold 0's training tasks; skipped with
   ``--no-before`` (it takes minutes);
2. now, cold: today's fit on the same tasks after emptying the process caches
   (``features.clear_view_cache``, ``utility.clear_pool_cache``), so it pays the BM25
   pools and features of every task once;
3. now, warm: the same fit again (the cached pools and features reused);
4. cross-fit: ``--fits`` consecutive fits on folds 0, 1, ... (different training tasks),
   starting from empty caches: seconds per fit and in all, as a cross-fitted run pays
   them in one process.

For each fit: seconds (wall clock, ``time.perf_counter``, and this process's CPU time,
``time.process_time``, which a busy machine inflates less), training tasks, the fitted
model's sha256 (``LearnedUtility.sha256``), λ and τ; a line says whether before and now
give the same sha256 (they can only where both search the same τ grid: ``--tau-grid``
replaces today's ``TAU_GRID`` for the "now" fits, e.g. ``--tau-grid 0.02,0.05,0.1,0.2``,
the grid before issue 39 extended it). With ``--profile``, the cold fit runs under
cProfile and the cumulative seconds of its parts are printed: BM25 pools, model-free
features, lane and pair model fits, the pair model's weights, the selections of the
λ × τ search (profiler overhead included, so only their shares mean anything).

Usage: ``python bench/learned_fit_time.py [--tau2-data PATH] [--folds 5] [--fits 5]
[--no-before] [--before-rev REV] [--tau-grid 0.02,0.05,0.1,0.2] [--profile]``.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import re
import subprocess
import sys
import time
import types
from pathlib import Path

from junction.learned import features as learned_features
from junction.learned import utility
from junction.learned.crossfit import DEFAULT_FOLDS, fold_assignment
from junction_datasets import build_suite
from junction_datasets import tau2_banking as tb

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tau2_anchors import data_arguments  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BEFORE_REV = "8740878"
"""The last commit whose learned fit had no caches (issue 39's starting point)."""

PARTS = {
    "BM25 pools": "candidates.py:.*\\(candidate_pools\\)",
    "model-free features": "features.py:.*\\(_compute_view_features\\)",
    "lane and pair model fits": "model.py:.*\\(fit_probability_model\\)",
    "p(gold) per task": "utility.py:.*\\(_probabilities\\)",
    "pair weights w(c, t)": "utility.py:.*\\(_pair_weights\\)",
    "selections of the λ × τ search": "utility.py:.*\\(_success\\)",
}
"""Parts of the fit reported by ``--profile``: label -> pstats pattern."""


def before_fit(rev: str):
    """``fit_learned_utility`` as it was at ``rev``: its three learned modules, from
    ``git show``, loaded under private names (so today's modules stay as they are)."""
    names = ("features", "model", "utility")
    for name in names:
        source = subprocess.run(["git", "show", f"{rev}:junction/learned/{name}.py"],
                                cwd=ROOT, check=True, capture_output=True, text=True).stdout
        source = re.sub(r"junction\.learned\.(features|model|utility)\b",
                        r"_learned_before_\1", source)
        module = types.ModuleType(f"_learned_before_{name}")
        sys.modules[module.__name__] = module
        exec(compile(source, f"{rev}:junction/learned/{name}.py", "exec"), module.__dict__)
    return sys.modules["_learned_before_utility"].fit_learned_utility


def fold_training(tasks, folds: int) -> list[list]:
    """The training tasks of each fold of repetition 0 (the tasks outside it)."""
    fold = fold_assignment([t.task_id for t in tasks], folds, 0)
    return [[t for t in tasks if fold[t.task_id] != k] for k in range(folds)]


def clear_caches() -> None:
    learned_features.clear_view_cache()
    utility.clear_pool_cache()


def timed(fit, tasks):
    """((wall seconds, CPU seconds of this process), model) of one fit on ``tasks``."""
    wall, cpu = time.perf_counter(), time.process_time()
    model = fit(tb.SUITE, tasks, tb.POOL_LIMIT, 0)
    return (time.perf_counter() - wall, time.process_time() - cpu), model


def line(label: str, seconds: tuple[float, float], tasks, model) -> str:
    tau = "none" if model.tau == float("inf") else f"{model.tau:g}"
    return (f"  {label:26s} {seconds[0]:7.1f} s wall {seconds[1]:7.1f} s CPU  "
            f"{len(tasks):3d} tasks  sha256 {model.sha256[:16]}  λ {model.lam:g}  τ {tau}")


def profile_parts(tasks) -> None:
    """The cold fit under cProfile: cumulative seconds of each of ``PARTS``."""
    clear_caches()
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.runcall(utility.fit_learned_utility, tb.SUITE, tasks, tb.POOL_LIMIT, 0)
    total = time.perf_counter() - start
    stats = pstats.Stats(profiler).stats  # (file, line, name) -> (cc, nc, tt, ct, callers)
    print(f"profile of the cold fit ({total:.1f} s under cProfile):")
    for label, pattern in PARTS.items():
        rx = re.compile(pattern)
        seconds = sum(ct for (file, lineno, name), (_, _, _, ct, _) in stats.items()
                      if rx.search(f"{file}:{lineno}({name})"))
        print(f"  {label:32s} {seconds:7.1f} s  {100 * seconds / total:5.1f}%")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folds", type=int, default=DEFAULT_FOLDS)
    parser.add_argument("--fits", type=int, default=DEFAULT_FOLDS,
                        help="consecutive fits on folds 0, 1, ... (at most --folds)")
    parser.add_argument("--before-rev", default=BEFORE_REV)
    parser.add_argument("--no-before", action="store_true")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--tau-grid", default=None,
                        help="comma-separated τ values the fits search instead of today's "
                             "TAU_GRID (before's own grid is its commit's)")
    args = data_arguments(parser.description, argv, parser)
    if args is None:
        return 2
    if args.tau_grid:
        utility.TAU_GRID = tuple(float(v) for v in args.tau_grid.split(","))
    tasks = build_suite(tb.SUITE, seed=0, size=None, split="all").tasks
    training = fold_training(tasks, args.folds)
    print(f"{tb.SUITE}: {len(tasks)} tasks, pool limit {tb.POOL_LIMIT}, {args.folds} folds; "
          f"fold 0 trains on {len(training[0])}; now's τ grid {utility.TAU_GRID}")
    before = None
    if not args.no_before:
        seconds, before = timed(before_fit(args.before_rev), training[0])
        print(line(f"before ({args.before_rev})", seconds, training[0], before))
    clear_caches()
    seconds, cold = timed(utility.fit_learned_utility, training[0])
    print(line("now, cold caches", seconds, training[0], cold))
    seconds, warm = timed(utility.fit_learned_utility, training[0])
    print(line("now, warm caches", seconds, training[0], warm))
    if before is not None:
        same = before.sha256 == cold.sha256 == warm.sha256
        print(f"  sha256 before and now: {'identical' if same else 'different'} (the same "
              "only where both search the same τ grid: --tau-grid 0.02,0.05,0.1,0.2 for "
              f"{BEFORE_REV}'s)")
    clear_caches()
    fits = min(args.fits, args.folds)
    wall = cpu = 0.0
    print(f"cross-fit: {fits} consecutive fits from empty caches, one process:")
    for k in range(fits):
        seconds, model = timed(utility.fit_learned_utility, training[k])
        wall, cpu = wall + seconds[0], cpu + seconds[1]
        print(line(f"fold {k}", seconds, training[k], model))
    print(f"  {fits} fits: {wall:.1f} s wall, {cpu:.1f} s CPU in all; "
          f"{wall / max(fits, 1):.1f} s wall each")
    if args.profile:
        profile_parts(training[0])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
