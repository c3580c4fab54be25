"""Do the exact solver's limits hold? Wall time against the time limit, and the answer
at a short and a long limit, on the two instances where they did not.

- ``gallo`` 400 candidates, Δ = 0.5, seed 3, 10 s limit: the selection's wall time
  (``select``, from the call to its return) against the limit plus ``CLOCK_SLACK_S``;
- ``gallo`` 200, Δ = 0.5, seed 4, at 10 s and at 60 s: the objective at 60 s must be at
  least the one at 10 s.

``AutoJointSelector`` (what the ``exact`` strategy runs) with the default work limit.
Prints one JSON row per run, with the load average (``os.getloadavg``) at its start; run
it once per code version and set the figures side by side with ``bench/compare.py``
(docs/measurement.md, "Solver limits"). Figures only: nothing here asserts a time.

    python bench/perf/solver_limits.py [--runs gallo:400:0.5:3:10 ...]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from junction.select import AutoJointSelector
from junction.select.instances import family_problem

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: results.py
from results import write_results

DEFAULT_RUNS = ("gallo:400:0.5:3:10", "gallo:200:0.5:4:10", "gallo:200:0.5:4:60")
"""family:candidates:density:seed:time limit (s)."""


def run(spec: str) -> dict:
    family, n, density, seed, limit = spec.split(":")
    problem = family_problem(family, int(n), int(seed), float(density))
    load = round(os.getloadavg()[0], 2)
    start = time.perf_counter()
    got = AutoJointSelector(time_limit_s=float(limit)).select(problem)
    wall = time.perf_counter() - start
    return {"run": spec, "limit_s": float(limit), "wall_s": round(wall, 2),
            "over_s": round(wall - float(limit), 2), "status": got.status,
            "objective": got.objective, "gap": got.gap, "nodes": got.subsets_examined,
            "lp_iterations": got.lp_iterations, "load_1min": load}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", nargs="*", default=list(DEFAULT_RUNS))
    args = parser.parse_args(argv)
    rows = []
    for spec in args.runs:
        rows.append(run(spec))
        print(json.dumps(rows[-1]), flush=True)
    write_results(__file__, {"runs": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
