"""Work the ``exact`` strategy spends on the default benchmark's instances.

Runs ``AutoJointSelector`` with no work limit and no clock on every task of every suite
at its default size (seed 0, budget scale 1, the suite's pool limit: what ``junction
bench`` runs) and prints, per suite, the search that ran and the largest number of
simplex iterations (branch and cut) and nodes one selection used, against
``DEFAULT_WORK_LIMIT``. Every selection here must be ``optimal``; the work limit must sit
well above the largest count. Deterministic: the counts repeat on any machine.

    python bench/perf/exact_work.py [--json] [--seed N ...]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from junction_datasets import build_suite, get_suite, suite_names

from junction.select import AutoJointSelector
from junction.select.exact import DEFAULT_WORK_LIMIT
from junction.strategies import run_selector

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: results.py
from results import write_results


def measure(seeds: list[int]) -> list[dict]:
    """One row per (suite, seed): tasks, searches run, statuses, max iterations/nodes."""
    selector = AutoJointSelector(time_limit_s=None, work_limit=None)
    rows = []
    for name in suite_names():
        info = get_suite(name)
        for seed in seeds:
            tasks = build_suite(name, seed=seed, size=info.default_size).tasks
            sels = [run_selector(selector, t.router_view(), info.pool_limit).selection
                    for t in tasks]
            rows.append({
                "suite": name, "seed": seed, "tasks": len(sels),
                "searches": sorted({s.strategy for s in sels}),
                "statuses": sorted({s.status for s in sels}),
                "max_lp_iterations": max((s.lp_iterations for s in sels), default=0),
                "max_nodes": max((s.subsets_examined for s in sels), default=0),
            })
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--seed", type=int, action="append")
    args = parser.parse_args()
    rows = measure(args.seed or [0])
    worst = max(r["max_lp_iterations"] for r in rows)
    write_results(__file__, {"work_limit": DEFAULT_WORK_LIMIT, "max_lp_iterations": worst,
                             "rows": rows})
    if args.json:
        print(json.dumps({"work_limit": DEFAULT_WORK_LIMIT, "max_lp_iterations": worst,
                          "rows": rows}, sort_keys=True))
        return
    for r in rows:
        print(f"{r['suite']:24} seed={r['seed']} tasks={r['tasks']:3} "
              f"{','.join(r['searches']):34} {','.join(r['statuses']):8} "
              f"iterations={r['max_lp_iterations']:8} nodes={r['max_nodes']}")
    print(f"largest: {worst} simplex iterations; DEFAULT_WORK_LIMIT {DEFAULT_WORK_LIMIT} "
          f"({DEFAULT_WORK_LIMIT / max(worst, 1):.1f}x)")


if __name__ == "__main__":
    main()
