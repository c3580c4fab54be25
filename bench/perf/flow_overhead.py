"""Orchestration overhead: a synthetic suite through the Prefect flow vs a plain loop.

Both sides do the same work in the same process: build the suite, evaluate every unit
(suite × strategy × batch) with ``flows.benchmark.run_unit_now``, write the Parquet traces,
refresh the warehouse. The flow side adds Prefect (temporary server start-up included,
task runs, state tracking). Prints one JSON object with --json:
{"tasks", "flow_s", "loop_s", "overhead"} where overhead = flow_s / loop_s - 1.
Goal: overhead < 0.25 at 10,000 tasks.

Usage: python bench/perf/flow_overhead.py [--tasks 10000] [--batch-size 500] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: results.py
from results import write_results

from flows.environment import configure_prefect_env

configure_prefect_env(logging_level="WARNING")

STRATEGIES = ["adaptive_split", "exact", "fixed_split"]


def run_loop(root: str, n_tasks: int, batch_size: int) -> float:
    from junction_datasets import build_suite, get_suite

    from flows.workers import run_unit_now
    from junction.evidence.warehouse import Warehouse
    from junction.units import UnitSpec

    start = time.perf_counter()
    built = build_suite("synthetic", seed=0, size=n_tasks)
    pool_limit = get_suite("synthetic").pool_limit
    for strategy in STRATEGIES:
        for lo in range(0, len(built.tasks), batch_size):
            hi = min(len(built.tasks), lo + batch_size)
            run_unit_now(UnitSpec(root=root, run_id="loop-run", suite="synthetic",
                                  strategy=strategy, seed=0, scale=1.0,
                                  unit=f"seed0-scale1-{lo:06d}-{hi:06d}",
                                  pool_limit=pool_limit), built.tasks[lo:hi])
    Warehouse(root).refresh()
    return time.perf_counter() - start


def run_flow(root: str, n_tasks: int, batch_size: int) -> float:
    from flows.runners import run_benchmark

    start = time.perf_counter()
    run_benchmark(suites=["synthetic"], strategies=STRATEGIES, size=n_tasks,
                  batch_size=batch_size, output_root=root, run_id="flow-run",
                  write_reports=False, workers=1)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--batch-size", type=int, default=500)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        loop_s = run_loop(f"{tmp}/loop", args.tasks, args.batch_size)
        flow_s = run_flow(f"{tmp}/flow", args.tasks, args.batch_size)
    result = {"tasks": args.tasks, "flow_s": round(flow_s, 3), "loop_s": round(loop_s, 3),
              "overhead": round(flow_s / loop_s - 1, 4), "batch_size": args.batch_size,
              "strategies": STRATEGIES, "server_start_included": True}
    write_results(__file__, result)
    if args.json:
        print(json.dumps(result, sort_keys=True))
    else:
        for key, value in result.items():
            print(f"{key:>22}: {value}")


if __name__ == "__main__":
    main()
