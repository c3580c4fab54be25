"""Learned fit time on τ-Knowledge: the fit before and after, on the same tasks and grid.

Times ``junction.learned.utility.fit_learned_utility`` on the tau2-banking suite
(``$JUNCTION_TAU2_DATA`` or ``--tau2-data PATH``; every task, ``split="all"``, the suite's
pool limit), on the training tasks of cross-fitting folds (``junction.learned.crossfit.
fold_assignment``, K = ``--folds``, repetition 0: fold k's training tasks are the tasks
outside fold k). Printed, in one process:

1. before: the fit as it was at ``--before-rev`` (default f318ee4, the last commit before
   the search ran on worker processes; its ``junction/learned/{features,model,utility}.py``
   and ``junction/candidates.py`` read with ``git show`` and run beside today's other
   modules) on fold 0's training tasks; skipped with ``--no-before``;
2. now, cold, one process: today's fit on the same tasks after emptying the process
   caches (``features.clear_view_cache``, ``utility.clear_pool_cache``, the BM25
   indexes), with ``workers=1`` (the search's selections in this process);
3. now, cold, on ``--workers`` worker processes (default ``grid.fit_workers()``: the
   CPUs), caches emptied again; the workers' start-up is paid here;
4. now, warm: the same fit again (cached pools and features, workers running);
5. cross-fit: ``--fits`` consecutive fits on folds 0, 1, ... (different training tasks),
   starting from empty caches: seconds per fit and in all, as a cross-fitted run pays
   them in one process.

``--family bfcl-tools`` (or ``bfcl-memory``) times the same fits on that BFCL family's
training rows (``family_training_tasks``, the suite's pool limit) instead: no folds, so
no cross-fit part.

For each fit: seconds (wall clock, ``time.perf_counter``, and this process's CPU time,
``time.process_time``, which a busy machine inflates less), training tasks, the fitted
model's sha256 (``LearnedUtility.sha256``), λ and τ; a line says whether before and now
give the same sha256 (they can only where both search the same τ grid: ``--tau-grid``
replaces today's ``TAU_GRID`` for the "now" fits, e.g. ``--tau-grid 0.02,0.05,0.1,0.2``,
the grid before it was extended below 0.02). With ``--profile``, the cold fit runs under
cProfile and the cumulative seconds of its parts are printed: BM25 pools, model-free
features, lane and pair model fits, the pair model's weights, the selections of the
λ × τ search (profiler overhead included, so only their shares mean anything).

``--no-alone`` leaves out the fit in one process (2.), and ``--fits 0`` the cross-fit
(5.): a short measurement of the worker pool alone, cold and warm.

Another checkout's fit (a commit before a change to the pool, say): put it first on
``PYTHONPATH`` with a folder holding a ``junction_datasets`` link to its ``datasets/``, and
run from outside either checkout (a worker process of the pool before loky put its
working directory first on its path). The first line printed names the ``junction``
package timed and its commit, and both are recorded with the figures::

    git worktree add /tmp/before b8b89c8
    mkdir -p /tmp/before_path && ln -s /tmp/before/datasets /tmp/before_path/junction_datasets
    cd /tmp && PYTHONPATH=/tmp/before:/tmp/before_path JUNCTION_TAU2_DATA=... \
        python /path/to/bench/perf/learned_fit_time.py --no-before --no-alone --fits 0

Usage: ``python bench/perf/learned_fit_time.py [--tau2-data PATH] [--folds 5] [--fits 5]
[--no-before] [--before-rev REV] [--no-alone] [--workers N] [--family F] [--tau-grid ...]
[--profile]``.
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

from junction_datasets import SUITES, build_suite, family_training_tasks
from junction_datasets import tau2_banking as tb

import junction
from junction import candidates
from junction.learned import features as learned_features
from junction.learned import grid, utility
from junction.learned.crossfit import DEFAULT_FOLDS, fold_assignment

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "studies"))
from tau2_anchors import data_arguments

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: results.py
from results import commit, write_results

ROOT = Path(__file__).resolve().parents[2]
FITS: list[dict] = []
"""Every fit timed in this run, in order (the figures ``write_results`` records)."""
PROFILE: dict[str, float] = {}
"""``--profile``: cumulative seconds of each of ``PARTS`` in the cold fit."""
BEFORE_REV = "f318ee4"
"""The last commit whose fit ran its search's selections in one process, one at a time."""

PARTS = {
    "BM25 pools": "candidates.py:.*\\(candidate_pools\\)",
    "model-free features": "features.py:.*\\(_compute_view_features\\)",
    "lane and pair model fits": "model.py:.*\\(fit_probability_model\\)",
    "p(gold) per task": "utility.py:.*\\(_probabilities\\)",
    "pair weights w(c, t)": "utility.py:.*\\(_pair_weights\\)",
    "selections of the λ × τ search": "grid.py:.*\\(solve_all\\)",
}
"""Parts of the fit reported by ``--profile``: label -> pstats pattern."""


def before_fit(rev: str):
    """``fit_learned_utility`` as it was at ``rev``: its three learned modules, from
    ``git show``, loaded under private names (so today's modules stay as they are)."""
    paths = {"candidates": "junction/candidates.py", "features": "junction/learned/features.py",
             "model": "junction/learned/model.py", "utility": "junction/learned/utility.py"}
    for name, path in paths.items():
        source = subprocess.run(["git", "show", f"{rev}:{path}"],
                                cwd=ROOT, check=True, capture_output=True, text=True).stdout
        source = re.sub(r"junction\.learned\.(features|model|utility)\b",
                        r"_learned_before_\1", source)
        source = re.sub(r"junction\.candidates\b", "_learned_before_candidates", source)
        module = types.ModuleType(f"_learned_before_{name}")
        sys.modules[module.__name__] = module
        exec(compile(source, f"{rev}:{path}", "exec"), module.__dict__)
    return sys.modules["_learned_before_utility"].fit_learned_utility


def fold_training(tasks, folds: int) -> list[list]:
    """The training tasks of each fold of repetition 0 (the tasks outside it)."""
    fold = fold_assignment([t.task_id for t in tasks], folds, 0)
    return [[t for t in tasks if fold[t.task_id] != k] for k in range(folds)]


def clear_caches() -> None:
    learned_features.clear_view_cache()
    utility.clear_pool_cache()
    candidates._BM25_INDEXES.clear()


def timed(fit, family: str, tasks, pool_limit, **kw):
    """((wall seconds, CPU seconds of this process), model)
    of one fit on ``tasks`` (worker processes' CPU time is not in the figure)."""
    wall, cpu = time.perf_counter(), time.process_time()
    model = fit(family, tasks, pool_limit, 0, **kw)
    return (time.perf_counter() - wall, time.process_time() - cpu), model


def line(label: str, seconds: tuple[float, float], tasks, model) -> str:
    tau = "none" if model.tau == float("inf") else f"{model.tau:g}"
    FITS.append({"fit": label, "wall_s": round(seconds[0], 2), "cpu_s": round(seconds[1], 2),
                 "tasks": len(tasks), "sha256": model.sha256[:16], "lam": model.lam,
                 "tau": tau})
    return (f"  {label:26s} {seconds[0]:7.1f} s wall {seconds[1]:7.1f} s CPU here  "
            f"{len(tasks):3d} tasks  sha256 {model.sha256[:16]}  λ {model.lam:g}  τ {tau}")


def profile_parts(tasks) -> None:
    """The cold fit under cProfile: cumulative seconds of each of ``PARTS``."""
    clear_caches()
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.runcall(utility.fit_learned_utility, tb.SUITE, tasks, tb.POOL_LIMIT, 0, workers=1)
    total = time.perf_counter() - start
    # (file, line, name) -> (cc, nc, tt, ct, callers): pstats' own table, not in its stubs
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    print(f"profile of the cold fit ({total:.1f} s under cProfile):")
    for label, pattern in PARTS.items():
        rx = re.compile(pattern)
        seconds = sum(ct for (file, lineno, name), (_, _, _, ct, _) in stats.items()
                      if rx.search(f"{file}:{lineno}({name})"))
        print(f"  {label:32s} {seconds:7.1f} s  {100 * seconds / total:5.1f}%")
        PROFILE[label] = round(seconds, 2)
    PROFILE["total under cProfile"] = round(total, 2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folds", type=int, default=DEFAULT_FOLDS)
    parser.add_argument("--fits", type=int, default=DEFAULT_FOLDS,
                        help="consecutive fits on folds 0, 1, ... (at most --folds)")
    parser.add_argument("--before-rev", default=BEFORE_REV)
    parser.add_argument("--no-before", action="store_true")
    parser.add_argument("--no-alone", action="store_true",
                        help="leave out the fit in one process (workers=1)")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--workers", type=int, default=None,
                        help="worker processes of the parallel fit (default: the CPUs)")
    parser.add_argument("--family", default=tb.SUITE,
                        help="tau2-banking (folds of the τ data) or a BFCL family "
                             "(bfcl-tools, bfcl-memory: its training rows)")
    parser.add_argument("--tau-grid", default=None,
                        help="comma-separated τ values the fits search instead of today's "
                             "TAU_GRID (before's own grid is its commit's)")
    args = data_arguments(parser.description, argv, parser)
    if args is None:
        return 2
    if args.tau_grid:
        utility.TAU_GRID = tuple(float(v) for v in args.tau_grid.split(","))
    workers = args.workers or grid.fit_workers()
    package = Path(junction.__file__).resolve().parent
    timed_commit = commit(package.parent)
    print(f"junction from {package} ({timed_commit})")
    if args.family == tb.SUITE:
        tasks = build_suite(tb.SUITE, seed=0, size=None, split="all").tasks
        training = fold_training(tasks, args.folds)
        pool_limit: candidates.PoolLimit = tb.POOL_LIMIT
        print(f"{tb.SUITE}: {len(tasks)} tasks, pool limit {pool_limit}, {args.folds} folds; "
              f"fold 0 trains on {len(training[0])}; τ grid {utility.TAU_GRID}; "
              f"{workers} workers")
    else:
        training = [family_training_tasks(args.family)]
        pool_limit = SUITES[next(n for n, i in SUITES.items() if i.family == args.family)
                            ].pool_limit
        print(f"{args.family}: {len(training[0])} training rows, pool limit {pool_limit}; "
              f"τ grid {utility.TAU_GRID}; {workers} workers")
    first = training[0]
    shas = {}
    if not args.no_before:
        seconds, before = timed(before_fit(args.before_rev), args.family, first, pool_limit)
        print(line(f"before ({args.before_rev})", seconds, first, before))
        shas["before"] = before.sha256
    if not args.no_alone:
        clear_caches()
        seconds, alone = timed(utility.fit_learned_utility, args.family, first, pool_limit,
                               workers=1)
        print(line("now, cold, 1 process", seconds, first, alone))
        shas["alone"] = alone.sha256
    clear_caches()
    seconds, cold = timed(utility.fit_learned_utility, args.family, first, pool_limit,
                          workers=workers)
    print(line(f"now, cold, {workers} workers", seconds, first, cold))
    seconds, warm = timed(utility.fit_learned_utility, args.family, first, pool_limit,
                          workers=workers)
    print(line(f"now, warm, {workers} workers", seconds, first, warm))
    shas.update(cold=cold.sha256, warm=warm.sha256)
    print(f"  sha256: {'identical' if len(set(shas.values())) == 1 else 'DIFFERENT'} "
          f"across {', '.join(shas)}")
    if args.family == tb.SUITE:
        clear_caches()
        fits = min(args.fits, args.folds)
        wall = cpu = 0.0
        print(f"cross-fit: {fits} consecutive fits from empty caches, one process, "
              f"{workers} workers:")
        for k in range(fits):
            seconds, model = timed(utility.fit_learned_utility, args.family, training[k],
                                   pool_limit, workers=workers)
            wall, cpu = wall + seconds[0], cpu + seconds[1]
            print(line(f"fold {k}", seconds, training[k], model))
        print(f"  {fits} fits: {wall:.1f} s wall in all; {wall / max(fits, 1):.1f} s each")
    grid.shutdown_workers()
    if args.profile:
        profile_parts(first)
    write_results(__file__, {"junction": str(package), "junction_commit": timed_commit,
                             "family": args.family, "workers": workers,
                             "tau_grid": list(utility.TAU_GRID), "fits": FITS,
                             "sha256_identical": len(set(shas.values())) == 1,
                             "profile": PROFILE or None})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
