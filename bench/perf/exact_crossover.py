"""Benchmark: small-pool exact selection, enumeration vs branch and cut vs combinatorial B&B.

Where ``AutoJointSelector`` switches from the combinatorial search to the branch and cut
(``AUTO_COMBINATORIAL_MAX``) and how far the combinatorial search is usable at all
(``COMBINATORIAL_MAX``) come from this script. Prints, side by side in one run, for
n = 12..48 candidates at budget tightness 0.4 and 1.0
(``random_problem`` of bench/perf/exact_solver.py, seeds 0..K-1): the median over instances of
each selector's best-of-R wall time for ``EnumerationJointSelector`` (enumeration, n <= 20 only),
``BranchAndCutJointSelector(time_limit_s=None)`` and ``CombinatorialJointSelector``; their
ratios; median / max search nodes (combinatorial: sets extended; branch and cut: LP nodes);
and whether every selector chose the same ``Selection`` (solver bookkeeping fields aside).
Figures only: nothing here asserts a time.

Usage: ``python bench/perf/exact_crossover.py [--instances K] [--repeats R] [--sizes ...] [--json]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # exact_solver.py beside it
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: results.py
from exact_solver import SOLVER_FIELDS  # noqa: E402
from results import write_results  # noqa: E402

from junction.select import (  # noqa: E402
    BranchAndCutJointSelector,
    CombinatorialJointSelector,
    EnumerationJointSelector,
    Selector,
)
from junction.select.instances import random_problem  # noqa: E402

ENUMERATION_MAX = 20


def _best_of(selector, problem, repeats: int):
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        selection = selector.select(problem)
        best = min(best, time.perf_counter() - start)
    return best, selection


def row(n: int, tightness: float, instances: int, repeats: int) -> dict:
    selectors: dict[str, Callable[[], Selector]] = {
        "bc": lambda: BranchAndCutJointSelector(time_limit_s=None),
        "comb": CombinatorialJointSelector}
    if n <= ENUMERATION_MAX:
        selectors = {"enum": EnumerationJointSelector, **selectors}
    times: dict[str, list[float]] = {k: [] for k in selectors}
    nodes: dict[str, list[int]] = {k: [] for k in ("bc", "comb")}
    same = True
    for seed in range(instances):
        problem = random_problem(n, seed, tightness=tightness)
        dumps = []
        for key, make in selectors.items():
            t, selection = _best_of(make(), problem, repeats)
            times[key].append(t)
            if key in nodes:
                nodes[key].append(selection.subsets_examined)
            dumps.append(selection.model_dump(exclude=SOLVER_FIELDS))
        same &= all(d == dumps[0] for d in dumps)
    out: dict[str, Any] = {"n": n, "tightness": tightness, "same_selection": same}
    for key, values in times.items():
        out[f"{key}_ms"] = round(statistics.median(values) * 1e3, 3)
    for key, counts in nodes.items():
        out[f"{key}_nodes_median"] = statistics.median(counts)
        out[f"{key}_nodes_max"] = max(counts)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=5, help="instances per row (5)")
    parser.add_argument("--repeats", type=int, default=3,
                        help="runs per instance and selector; the best counts (3)")
    parser.add_argument("--sizes", type=int, nargs="*",
                        default=[12, 16, 20, 24, 28, 32, 40, 48], help="candidates per pool")
    parser.add_argument("--tightness", type=float, nargs="*", default=[0.4, 1.0],
                        help="every budget limit as a share of the pool's total")
    parser.add_argument("--json", action="store_true", help="print one JSON list")
    args = parser.parse_args(argv)
    rows = [row(n, t, args.instances, args.repeats) for t in args.tightness
            for n in args.sizes]
    write_results(__file__, {"instances": args.instances, "repeats": args.repeats, "rows": rows})
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{args.instances} instances, best of {args.repeats} each; medians over instances")
    print(f"{'tight':>5} {'n':>3} {'enum ms':>9} {'B&C ms':>8} {'comb ms':>8} "
          f"{'enum/comb':>9} {'B&C/comb':>8} {'comb nodes med/max':>19} "
          f"{'B&C nodes med/max':>18} same")
    for r in rows:
        enum = r.get("enum_ms")
        speedup = f"{enum / r['comb_ms']:.0f}x" if enum else "-"
        print(f"{r['tightness']:>5} {r['n']:>3} "
              f"{enum if enum is not None else '-':>9} {r['bc_ms']:>8.2f} {r['comb_ms']:>8.3f} "
              f"{speedup:>9} "
              f"{r['bc_ms'] / r['comb_ms']:>7.1f}x "
              f"{r['comb_nodes_median']:>9}/{r['comb_nodes_max']:<9} "
              f"{r['bc_nodes_median']:>8}/{r['bc_nodes_max']:<9} {r['same_selection']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
