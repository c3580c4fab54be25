"""Benchmark: exact joint selection by enumeration versus the solvers, and solver scaling.

"solver" is ``AutoJointSelector``, what the ``exact`` strategy runs: the combinatorial
branch and bound (``CombinatorialJointSelector``) up to 32 candidates, the branch and cut
(``BranchAndCutJointSelector``) above. "branch_and_cut" and "milp" (``MilpJointSelector``
of bench/milp_reference.py, HiGHS's own branch and cut on the same model) are timed on the same instances for
comparison. Prints, side by side in one run, the enumerating selector's and the solvers'
median times at 12, 16 and 20 candidates (with their ratios and whether all chose the
same set), and the solver's median and worst times at 50, 100, 200 and 400 candidates
(where it is the branch and cut) for two budget tightnesses, with the MILP's and the
issue's plain model's (``PlainMilp``) on the same instances. Figures only: nothing here
asserts a time.

Two scaling families, because the tightness changes the difficulty by orders of
magnitude: at 0.4 (the default family) the issue's plain model proves none of 5 instances
at 200 candidates (within this script's 10 s, and none within 30 s either, measured
separately), where the issue measured a median of 4.1 s for it on its (unstated)
instances; at 0.7 its median there was 1.7 s in one run of this script and 3.5 s with a
30 s limit on 2026-11-30, close to the issue's figure. Density matters as much: at 400
candidates the solver proves none of 5 within 10 s at density 0.1, but all 5 at density
0.05 with limits at 70% (median 0.97 s) and at density 0.025 with limits at 40% (2.4 s);
``--density`` sets it.

Instances (``random_problem``): half contexts, half tools; token costs uniform integers in
[40, 200] (contexts) and [20, 120] (tool schemas); tool latency uniform in [50, 2000] ms and
cost in [0, 0.01] USD; unary utility uniform in [0, 1]; each context–tool pair gets an
interaction with probability ``density`` (0.1), weight standard normal, stored under one
random order; every budget limit is ``tightness`` (0.4) times the pool's total (1.0: all
fits, so enumeration visits all 2^n subsets; tight budgets let it prune). Scores are
rounded to 4 decimals, as the synthetic suites round them. Seeded with ``random.Random``.

Usage: ``python bench/exact_solver.py [--json] [--instances K] [--time-limit S]
[--versus N ...] [--scaling N ...] [--scaling-tightness T ...] [--no-milp] [--no-plain]``
(``--help`` for all)
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import csr_array

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from junction.budget import Budget  # noqa: E402
from junction.resources import ContextResource, ToolResource  # noqa: E402
from junction.select import (  # noqa: E402
    AutoJointSelector,
    BranchAndCutJointSelector,
    EnumerationJointSelector,
    JointProblem,
)
from milp_reference import MilpJointSelector  # noqa: E402

SOLVER_FIELDS = {"strategy", "solve_time_ms", "subsets_examined", "subsets_feasible",
                 "status", "gap"}
"""Fields two exact selectors' answers may differ in (bookkeeping, and the name of the
algorithm in ``strategy``)."""


def random_problem(n: int, seed: int, density: float = 0.1, tightness: float = 0.4,
                   max_size: int | None = None) -> JointProblem:
    """One seeded instance with ``n`` candidates (see the module docstring)."""
    rng = random.Random(f"junction-bench-exact:{n}:{seed}:{density}:{tightness}")
    n_ctx = n // 2
    contexts = tuple(ContextResource(id=f"ctx-{i:03d}", content="",
                                     token_cost=rng.randint(40, 200)) for i in range(n_ctx))
    tools = tuple(
        ToolResource(id=f"tool-{j:03d}", description="", schema_token_cost=rng.randint(20, 120),
                     estimated_latency_ms=round(rng.uniform(50, 2000), 1),
                     estimated_cost_usd=round(rng.uniform(0, 0.01), 5))
        for j in range(n - n_ctx)
    )
    unary = {r.id: round(rng.random(), 4) for r in (*contexts, *tools)}
    interactions = {}
    for c in contexts:
        for t in tools:
            if rng.random() < density:
                key = (c.id, t.id) if rng.random() < 0.5 else (t.id, c.id)
                interactions[key] = round(rng.gauss(0.0, 1.0), 4)
    total_tokens = sum(r.token_cost for r in (*contexts, *tools))
    budget = Budget(
        max_tokens=math.floor(tightness * total_tokens),
        max_tools=max(1, math.floor(tightness * len(tools))),
        max_latency_ms=round(tightness * sum(t.estimated_latency_ms for t in tools), 1),
        max_cost_usd=round(tightness * sum(t.estimated_cost_usd for t in tools), 5),
    )
    return JointProblem(contexts, tools, budget, unary, interactions, max_size)


def _timed(selector, problem):
    start = time.perf_counter()
    selection = selector.select(problem)
    return time.perf_counter() - start, selection


def versus_enumeration(sizes, instances: int, tightness: float) -> list[dict]:
    solvers = {"solver": lambda: AutoJointSelector(time_limit_s=None),
               "branch_and_cut": lambda: BranchAndCutJointSelector(time_limit_s=None),
               "milp": lambda: MilpJointSelector(time_limit_s=None)}
    rows = []
    for n in sizes:
        enum_times, times, same = [], {k: [] for k in solvers}, True
        for seed in range(instances):
            problem = random_problem(n, seed, tightness=tightness)
            te, expected = _timed(EnumerationJointSelector(), problem)
            enum_times.append(te)
            want = expected.model_dump(exclude=SOLVER_FIELDS)
            for name, factory in solvers.items():
                t, got = _timed(factory(), problem)
                times[name].append(t)
                same &= got.model_dump(exclude=SOLVER_FIELDS) == want
        e = statistics.median(enum_times)
        row = {"n": n, "tightness": tightness, "enumeration_median_s": round(e, 4)}
        for name in solvers:  # the keys for the solver: solver_median_s, ratio
            m = statistics.median(times[name])
            row[f"{name}_median_s"] = round(m, 4)
            row["ratio" if name == "solver" else f"{name}_ratio"] = round(e / m, 1)
        row["same_selection"] = same
        rows.append(row)
    return rows


class PlainMilp:
    """The direct model the issue measured, for calibrating instance families against its
    figures: one binary per candidate, one y_ct in [0, 1] per pair with W != 0 and the
    standard three rows (y <= x_c, y <= x_t, y >= x_c + x_t - 1) whatever W's sign, the
    budget rows, solved by ``scipy.optimize.milp`` (HiGHS) as is: no reductions, no cuts,
    no tie rule (its set may differ from the others' among ties)."""

    def __init__(self, time_limit_s: float | None) -> None:
        self.time_limit_s = time_limit_s

    def select(self, problem: JointProblem) -> SimpleNamespace:
        items = [*problem.contexts, *problem.tools]
        n, n_ctx = len(items), len(problem.contexts)
        pairs = [(i, n_ctx + j, w) for i, c in enumerate(problem.contexts)
                 for j, t in enumerate(problem.tools) if (w := problem.pair(c.id, t.id))]
        nvar = n + len(pairs)
        c = np.zeros(nvar)
        c[:n] = [problem.u(r.id) for r in items]
        c[n:] = [w for *_, w in pairs]
        rows, cols, vals, lo, hi = [], [], [], [], []

        def row(entries, low, high):
            for k, v in entries:
                rows.append(len(lo))
                cols.append(k)
                vals.append(v)
            lo.append(low)
            hi.append(high)

        b = problem.budget
        tools = range(n_ctx, n)
        for limit, entries in (
            (b.max_tokens, [(k, r.token_cost) for k, r in enumerate(items)]),
            (b.max_tools, [(k, 1.0) for k in tools]),
            (b.max_latency_ms, [(k, items[k].estimated_latency_ms) for k in tools]),
            (b.max_cost_usd, [(k, items[k].estimated_cost_usd) for k in tools]),
            (problem.max_size, [(k, 1.0) for k in range(n)]),
        ):
            if limit is not None:
                row(entries, -np.inf, limit)
        for k, (i, j, _) in enumerate(pairs):
            row([(n + k, 1.0), (i, -1.0)], -np.inf, 0.0)
            row([(n + k, 1.0), (j, -1.0)], -np.inf, 0.0)
            row([(n + k, 1.0), (i, -1.0), (j, -1.0)], -1.0, np.inf)
        A = csr_array((vals, (rows, cols)), shape=(len(lo), nvar))
        options = {} if self.time_limit_s is None else {"time_limit": self.time_limit_s}
        res = milp(-c, constraints=LinearConstraint(A, lo, hi),
                   integrality=np.r_[np.ones(n), np.zeros(len(pairs))], bounds=Bounds(0, 1),
                   options=options)
        status = {0: "optimal", 1: "time_limit"}.get(res.status, res.message)
        return SimpleNamespace(status=status, gap=getattr(res, "mip_gap", None),
                               objective=None if res.x is None else -float(res.fun))


def _runs(selector_factory, n: int, instances: int, time_limit: float,
          tightness: float, density: float) -> dict:
    times, statuses, gaps, objectives = [], [], [], []
    for seed in range(instances):
        t, got = _timed(selector_factory(time_limit_s=time_limit),
                        random_problem(n, seed, density=density, tightness=tightness))
        times.append(t)
        statuses.append(got.status)
        gaps.append(got.gap)
        objectives.append(got.objective)
    return {"median_s": round(statistics.median(times), 3), "max_s": round(max(times), 3),
            "all_optimal": all(s == "optimal" for s in statuses),
            "optimal": sum(s == "optimal" for s in statuses),
            "worst_gap": max((g for g in gaps if g is not None), default=None),
            "objectives": objectives}


def scaling(sizes, instances: int, time_limit: float, tightness: float, density: float,
            milp: bool, plain: bool) -> list[dict]:
    rows = []
    for n in sizes:
        solver = _runs(AutoJointSelector, n, instances, time_limit, tightness, density)
        row = {"n": n, "tightness": tightness, "density": density, "instances": instances,
               **solver}
        others = {"milp": MilpJointSelector} if milp else {}
        if plain:
            others["plain_milp"] = PlainMilp
        for name, factory in others.items():
            other = _runs(factory, n, instances, time_limit, tightness, density)
            row.update({f"{name}_{k}": v for k, v in other.items() if k != "objectives"})
            # instance by instance: how much better the solver's set is (both proven: 0)
            row[f"solver_objective_minus_{name}"] = [
                None if b is None else round(a - b, 6) + 0.0  # + 0.0: no "-0.0"
                for a, b in zip(solver["objectives"], other["objectives"])]
        row.pop("objectives")
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--instances", type=int, default=5,
                        help="instances per size in the scaling runs (5)")
    parser.add_argument("--enumeration-instances", type=int, default=3,
                        help="instances per size for the enumeration comparison (3)")
    parser.add_argument("--time-limit", type=float, default=10.0,
                        help="solver time limit per instance in the scaling runs, s (10)")
    parser.add_argument("--versus", type=int, nargs="*", default=[12, 16, 20],
                        help="pool sizes for the enumeration comparison (12 16 20)")
    parser.add_argument("--versus-tightness", type=float, nargs="*", default=[0.4, 1.0],
                        help="budget tightness for the enumeration comparison (0.4: the "
                             "scaling family; 1.0: every limit is the pool total, nothing pruned)")
    parser.add_argument("--scaling", type=int, nargs="*", default=[50, 100, 200, 400],
                        help="pool sizes for the scaling runs (50 100 200 400)")
    parser.add_argument("--scaling-tightness", type=float, nargs="*", default=[0.4, 0.7],
                        help="budget tightness of the scaling families (0.4: the default "
                             "family; 0.7: where the issue's plain model takes about the "
                             "issue's 4.1 s at 200 candidates)")
    parser.add_argument("--density", type=float, default=0.1,
                        help="interaction density of the scaling families (0.1, the issue's)")
    parser.add_argument("--no-milp", action="store_true",
                        help="skip MilpJointSelector in the scaling runs (it takes ~2 min "
                             "per family); the enumeration comparison still times it")
    parser.add_argument("--no-plain", action="store_true",
                        help="skip the issue's plain model (PlainMilp) in the scaling runs")
    args = parser.parse_args(argv)
    result = {
        "versus_enumeration": [
            row for tightness in args.versus_tightness
            for row in versus_enumeration(args.versus, args.enumeration_instances, tightness)
        ],
        "scaling": [
            row for tightness in args.scaling_tightness
            for row in scaling(args.scaling, args.instances, args.time_limit, tightness,
                               args.density, not args.no_milp, not args.no_plain)
        ],
        "time_limit_s": args.time_limit,
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for row in result["versus_enumeration"]:
            print("n={n:4d} tightness {tightness} enumeration {enumeration_median_s:8.4f}s solver "
                  "{solver_median_s:8.4f}s ratio {ratio:7.1f} | branch and cut "
                  "{branch_and_cut_median_s:8.4f}s ratio {branch_and_cut_ratio:6.1f} | milp "
                  "{milp_median_s:8.4f}s ratio {milp_ratio:6.1f} same={same_selection}"
                  .format(**row))
        for row in result["scaling"]:
            line = ("n={n:4d} tightness {tightness} density {density} solver median {median_s:7.3f}s max "
                    "{max_s:7.3f}s optimal {optimal}/{instances} worst gap {worst_gap}"
                    .format(**row))
            for name in ("milp", "plain_milp"):
                if f"{name}_median_s" in row:
                    line += " | {} median {:7.3f}s max {:7.3f}s optimal {}/{}".format(
                        name, row[f"{name}_median_s"], row[f"{name}_max_s"],
                        row[f"{name}_optimal"], row["instances"])
            print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
