"""Root bounds of the branch and cut, for measuring them (no search).

``root_bounds`` runs only the root of ``BranchAndCutJointSelector`` (``root.solve_root``
on a fresh ``search.Search``) and returns its bounds and their cost; bench/perf/exact_solver.py
builds its root-gap table from it. Run as a script it prints the bounds of one named
instance:

    python bench/perf/qkp_bounds.py gallo 200 0.5 0 [--time-limit S]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

from junction.select import JointProblem
from junction.select.exact import DEFAULT_WORK_LIMIT
from junction.select.exact.reduction import reduce
from junction.select.exact.root import solve_root
from junction.select.exact.search import Search
from junction.select.instances import FAMILIES, family_problem

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: results.py
from results import write_results


def root_bounds(problem: JointProblem, product_rows: bool = True, cycle_cuts: bool = True,
                max_size: int | None = None, work_limit: int | None = DEFAULT_WORK_LIMIT,
                time_limit_s: float | None = None) -> dict[str, float]:
    """The branch and cut's root bounds on one problem.

    Returns ``lp`` (the first LP's value: the McCormick rows, plus the product rows of
    ``model.product_rows`` when ``product_rows``) and ``lp_s`` (seconds from the start,
    the reduction included), then, when ``cycle_cuts``, ``cuts`` and ``cuts_s`` after the
    root's odd-cycle separation rounds (the same rules as ``BranchAndCutJointSelector``);
    ``iterations`` (simplex iterations); ``candidates`` (after ``reduction.reduce``).
    ``time_limit_s`` (seconds, from the start): an LP it stops leaves its bound out
    (``lp`` or ``cuts`` absent; a stopped separation round keeps the last finished
    round's value as ``cuts`` and sets ``cuts_stopped`` to 1.0). Bounds are in the
    objective's units (an upper bound on the optimum); only ``candidates`` when nothing
    is left after the reduction."""
    start = time.perf_counter()
    size_cap = max_size if max_size is not None else problem.max_size
    red = reduce(problem, size_cap)
    out: dict[str, float] = {"candidates": len(red.items)}
    if not red.items:
        return out
    deadline = None if time_limit_s is None else start + time_limit_s
    search = Search(problem, red, size_cap, deadline, work_limit)
    setup = time.perf_counter() - start
    solve_root(search, product_rows, 0 if cycle_cuts else math.inf)
    out.update({k: v + setup if k.endswith("_s") else v for k, v in search.trace.items()
                if math.isfinite(v)})
    out["iterations"] = search.lp.iterations
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("family", choices=sorted(FAMILIES))
    parser.add_argument("n", type=int, help="candidates")
    parser.add_argument("density", type=float, help="Δ (gallo) or pair density (mixed)")
    parser.add_argument("seed", type=int)
    parser.add_argument("--time-limit", type=float, default=None, help="seconds (none)")
    args = parser.parse_args(argv)
    problem = family_problem(args.family, args.n, args.seed, args.density)
    rows = {name: root_bounds(problem, product_rows=products, time_limit_s=args.time_limit)
            for name, products in (("mccormick", False), ("product", True))}
    print(json.dumps(rows, indent=2))
    write_results(__file__, {"instance": {"family": args.family, "n": args.n,
                                          "density": args.density, "seed": args.seed},
                             "bounds": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
