"""Would an approximate λ × τ search fit the same model? The learned fit's exact search
against two cheaper ones, on the training tasks of τ-Knowledge's cross-fitting folds.

The fit (``junction.learned.utility.fit_learned_utility``) chooses λ and τ by the training
success of the exact joint selector's selections on every grid point; those selections
are most of its time (docs/measurement.md, "Learned fit time"). This study fits each
fold's training tasks three ways, in one process, and prints, per fold, the λ and τ each
chose, its seconds, and how many of the grid's points got another training success than
the exact search's:

- ``exact``: the fit as it is (search ``optimal``);
- ``local``: every grid-point problem by ``junction.select.exact.local_search`` (greedy
  insertion, improving flips and swaps: no optimality claim);
- ``hybrid``: the exact combinatorial search where at most ``bnb.COMBINATORIAL_MAX``
  candidates are left after reduction (cheap there), local search above

(``fit_learned_utility``'s ``search``, ``junction.learned.grid.SEARCHES``), each on
``--workers`` worker processes.

A cheaper search that chose the same λ and τ on every fold would give the same models
(the lane and pair models do not depend on the search) and so the same selections at
evaluation; one that chooses others changes the learned strategies' results, which would
then have to be measured on the cross-fitted verdict. Folds: ``junction.learned.crossfit.
fold_assignment`` (K = ``--folds``), repetitions 0 .. ``--repetitions`` − 1, fold k's
training tasks being the tasks outside it; pool rule ``--rule`` (the suite's default:
BM25).

Usage: ``python bench/studies/grid_search_approximation.py [--tau2-data PATH] [--folds 5]
[--repetitions 1] [--rule bm25] [--workers N]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from junction_datasets import build_suite
from junction_datasets import tau2_banking as tb

from junction.candidates import DEFAULT_POOL_RULE
from junction.learned import grid, utility
from junction.learned.crossfit import DEFAULT_FOLDS, fold_assignment

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tau2_anchors import data_arguments

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: results.py
from results import write_results

SEARCHES = tuple(s for s in grid.SEARCHES if s != grid.OPTIMAL_SEARCH)
"""The approximate searches compared with the exact one (``junction.learned.grid.SEARCHES``)."""


def table(model) -> dict[tuple, float]:
    """(λ, τ) -> training success of a fitted model's search."""
    return {(row["lambda"], row["tau"]): row["training_success"] for row in model.search}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folds", type=int, default=DEFAULT_FOLDS)
    parser.add_argument("--repetitions", type=int, default=1)
    parser.add_argument("--rule", default=DEFAULT_POOL_RULE)
    parser.add_argument("--workers", type=int, default=None,
                        help="worker processes of the exact search (default: the CPUs)")
    args = data_arguments(parser.description, argv, parser)
    if args is None:
        return 2
    workers = args.workers or grid.fit_workers()
    tasks = build_suite(tb.SUITE, seed=0, size=None, split="all").tasks
    rows = []
    print(f"{tb.SUITE}: {len(tasks)} tasks, {args.folds} folds x {args.repetitions} "
          f"repetitions, pool rule {args.rule}; exact search on {workers} workers")
    for rep in range(args.repetitions):
        fold = fold_assignment([t.task_id for t in tasks], args.folds, rep)
        for k in range(args.folds):
            training = [t for t in tasks if fold[t.task_id] != k]
            row: dict = {"repetition": rep, "fold": k, "tasks": len(training)}
            fits = {}
            for search in ("exact", *SEARCHES):
                t0 = time.perf_counter()
                fits[search] = utility.fit_learned_utility(
                    tb.SUITE, training, tb.POOL_LIMIT, 0, workers=workers, rule=args.rule,
                    search=grid.OPTIMAL_SEARCH if search == "exact" else search)
                row[f"{search}_s"] = round(time.perf_counter() - t0, 1)
            exact = table(fits["exact"])
            parts = [f"rep {rep} fold {k}: exact λ {fits['exact'].lam:g} τ "
                     f"{fits['exact'].tau:g} ({row['exact_s']:.0f} s)"]
            row.update(lam_exact=fits["exact"].lam, tau_exact=fits["exact"].tau)
            for search in SEARCHES:
                model = fits[search]
                got = table(model)
                same = (model.lam, model.tau) == (fits["exact"].lam, fits["exact"].tau)
                differing = sum(abs(got[g] - exact[g]) > 1e-9 for g in exact)
                row.update({f"lam_{search}": model.lam, f"tau_{search}": model.tau,
                            f"same_choice_{search}": same,
                            f"grid_points_differing_{search}": differing})
                parts.append(f"{search} λ {model.lam:g} τ {model.tau:g} "
                             f"({row[f'{search}_s']:.0f} s) {'same' if same else 'OTHER'}, "
                             f"{differing}/{len(exact)} grid points differ")
            rows.append(row)
            print("  " + "; ".join(parts), flush=True)
    grid.shutdown_workers()
    summary = {}
    for search in ("exact", *SEARCHES):
        summary[f"mean_s_{search}"] = round(sum(r[f"{search}_s"] for r in rows) / len(rows), 1)
    for search in SEARCHES:
        summary[f"same_choice_{search}"] = sum(r[f"same_choice_{search}"] for r in rows)
        print(f"{search}: the exact search's λ and τ on {summary[f'same_choice_{search}']} of "
              f"{len(rows)} fits; {summary[f'mean_s_{search}']} s a fit against "
              f"{summary['mean_s_exact']} s exact")
    text = "; ".join(f"{search}: exact's λ and τ on {summary[f'same_choice_{search}']} of "
                     f"{len(rows)} fits, {summary[f'mean_s_{search}']} s a fit"
                     for search in SEARCHES)
    write_results(__file__, {"summary": f"{text}; exact {summary['mean_s_exact']} s a fit",
                             "rule": args.rule, "folds": args.folds,
                             "repetitions": args.repetitions, "fits": rows, **summary})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
