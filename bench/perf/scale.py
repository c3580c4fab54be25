"""Scale-out: the same CPU-bound benchmark grid on a Dask cluster of 1 and of 2 workers.

The grid: 200 synthetic tasks with 8 contexts + 8 tools each, solved by the enumerating
reference selector (``EnumerationJointSelector``: pure Python, one thread, up to 2^16 subsets
per task). HiGHS, behind the ``exact`` strategy, runs threads of its own (user time 1.3×
wall time measured here), so it would measure HiGHS's threading, not the runner's.
The reference selector is registered as strategy ``exact_enumeration`` in this process
and in every worker (``Client.run``).

Each cluster (processes, one thread each) is started and warmed up (imports done, and a
tiny run on every worker so Prefect's task engine is initialised there) before its timing
starts, and the Prefect temporary server is started by a warm-up run first, so
the figures time the grid's work and its orchestration, not process start-up. Prints, with
--json: {"workers_1_s", "workers_2_s", "speedup", "tasks", "units"}; speedup =
workers_1_s / workers_2_s. Goal: >= 1.6 on 2 cores.

Usage: python bench/perf/scale.py [--tasks 800] [--batch-size 100] [--json]
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

STRATEGY = "exact_enumeration"


def register_enumeration() -> str:
    """Register the reference selector as a strategy (run here and on every worker)."""
    from junction.select import EnumerationJointSelector
    from junction.strategies import StrategyInfo, register_strategy, selector_strategy

    def factory():
        return selector_strategy(EnumerationJointSelector())

    register_strategy(StrategyInfo(STRATEGY, factory, "joint", "exhaustive enumeration",
                                   sees_interactions=True, claims_optimal=True))
    import flows.benchmark  # noqa: F401 - import everything a unit needs

    return "ok"


def write_grid(path: str, tasks: int) -> str:
    """A suite file of synthetic tasks with 8 contexts + 8 tools (about 35 ms of work each)."""
    from junction_datasets.toy import synthetic_suite

    with open(path, "w") as handle:
        for task in synthetic_suite(seed=0, size=tasks, n_contexts=8, n_tools=8,
                                    tightness=0.6, suite="scale-grid"):
            handle.write(task.model_dump_json() + "\n")
    return path


def timed_run(workers: int, root: str, suite_file: str, batch_size: int) -> tuple[float, dict]:
    from distributed import Client, LocalCluster

    from flows.runners import run_benchmark

    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        client.run(register_enumeration)
        # Warm each worker's Prefect task engine (clients, settings) with a tiny run first.
        run_benchmark(suites=["coupling"], strategies=[STRATEGY], output_root=f"{root}-warm",
                      runner="dask", dask_address=cluster.scheduler_address,
                      write_reports=False, seeds=list(range(workers)))
        start = time.perf_counter()
        result = run_benchmark(suite_files=[suite_file], strategies=[STRATEGY],
                               batch_size=batch_size, output_root=root, runner="dask",
                               dask_address=cluster.scheduler_address, write_reports=False)
        return time.perf_counter() - start, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=800)
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    register_enumeration()
    from flows.runners import run_benchmark

    with tempfile.TemporaryDirectory() as tmp:
        run_benchmark(suites=["coupling"], strategies=["fixed_split"], output_root=f"{tmp}/warm",
                      write_reports=False)
        grid = write_grid(f"{tmp}/grid.jsonl", args.tasks)
        one, result = timed_run(1, f"{tmp}/w1", grid, args.batch_size)
        two, _ = timed_run(2, f"{tmp}/w2", grid, args.batch_size)
    out = {"workers_1_s": round(one, 3), "workers_2_s": round(two, 3),
           "speedup": round(one / two, 3), "tasks": result["tasks"], "units": result["units"]}
    write_results(__file__, out)
    if args.json:
        print(json.dumps(out, sort_keys=True))
    else:
        for key, value in out.items():
            print(f"{key:>12}: {value}")


if __name__ == "__main__":
    main()
