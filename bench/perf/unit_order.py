"""The default `make bench` in two unit orders, one after the other: wall time and chains.

Usage: ``python bench/perf/unit_order.py [--json] [--order suite-major --order round-robin]``

Runs ``junction bench`` (the default plan) once per order, each in a fresh state folder
(empty agent and judge caches; the embedded model linked in, not copied) and a fresh
warehouse, with the same run id, so the two runs' traces and ``metrics.json`` can be
compared byte for byte (``compare_runs.compare``). Orders:

- ``round-robin``: ``flows.benchmark.plan_units`` as it is (round-robin over strategies);
- ``suite-major``: the same units stably sorted by (suite, strategy), the order before it
  (per suite, every strategy's units).

Prints per order: the command's wall seconds, the run's seconds from ``started_at`` to
``finished_at``, the agent's generations and their seconds (cache misses only: a hit's
``agent_ms`` is its cache lookup's, not a generation), the judge's
selection seconds, and the seconds from the run's start to each strategy's last unit
(its trace file's modification time): the chain that ends last is the run's critical path.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "checks"))
from compare_runs import compare

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: results.py
from results import write_results

ROOT = Path(__file__).resolve().parents[2]
RUN_ID = "unit-order"

SUITE_MAJOR = """
import flows.benchmark as b
_plan_units = b.plan_units
def suite_major(plan, suites, run_id):
    units = _plan_units(plan, suites, run_id)
    suite_rank = {(s.name, s.seed): i for i, s in enumerate(suites)}
    strategy_rank = {n: i for i, n in enumerate(plan.steps())}
    return sorted(units, key=lambda u: (suite_rank[(u[0].suite, u[0].seed)],
                                        strategy_rank[u[0].strategy]))
b.plan_units = suite_major
"""
RUN = "import sys; from flows.cli import main; sys.argv = ['junction', *sys.argv[1:]]; main()"


def run_order(order: str, work: Path) -> dict:
    """Run the default benchmark in ``order`` under ``work``; its figures."""
    state = work / "state"
    state.mkdir(parents=True)
    (state / "models").symlink_to(ROOT / ".state" / "models")
    env = {**os.environ, "JUNCTION_STATE_DIR": str(state),
           "PREFECT_HOME": str(state / "prefect"), "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
           "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120", "DO_NOT_TRACK": "1"}
    code = (SUITE_MAJOR if order == "suite-major" else "") + RUN
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", code, "bench", "--run-id", RUN_ID,
                    "--warehouse", str(work / "warehouse"), "--reports", str(work / "reports")],
                   cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    meta = json.loads((work / "warehouse" / "runs" / f"{RUN_ID}.json").read_text())
    start = datetime.fromisoformat(meta["started_at"])
    end = datetime.fromisoformat(meta["finished_at"])
    con = duckdb.connect()
    timings = f"read_parquet('{work / 'warehouse' / 'timings'}/**/*.parquet', union_by_name=true)"
    gen = con.execute(f"select count(*), coalesce(sum(agent_ms), 0) / 1000 from {timings} "
                      "where agent_ms > 0 and not agent_cached").fetchall()[0]
    judge = con.execute(f"select coalesce(sum(select_ms), 0) / 1000 from {timings} "
                        "where strategy = 'judge_admission'").fetchall()[0][0]
    last: dict[str, float] = {}
    for path in (work / "warehouse" / "traces").rglob("*.parquet"):
        strategy = next(p.split("=", 1)[1] for p in path.parts if p.startswith("strategy="))
        at = path.stat().st_mtime - start.timestamp()
        last[strategy] = max(last.get(strategy, 0.0), at)
    return {"order": order, "wall_s": round(wall, 1),
            "run_s": round((end - start).total_seconds(), 1),
            "generations": gen[0], "generation_s": round(gen[1], 1),
            "judge_select_s": round(judge, 1),
            "strategy_last_unit_s": {k: round(v, 1) for k, v in sorted(last.items())},
            "report": str(work / "reports" / RUN_ID)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--order", action="append", choices=("suite-major", "round-robin"))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    orders = args.order or ["suite-major", "round-robin"]
    with tempfile.TemporaryDirectory(prefix="unit-order-") as tmp:
        results = [run_order(o, Path(tmp) / o) for o in orders]
        same = None
        if len(results) == 2:
            a, b = (Path(tmp) / o for o in orders)
            same = compare(a / "warehouse", a / "reports" / RUN_ID,
                           b / "warehouse", b / "reports" / RUN_ID)
    out = {"orders": results, "same_results": same,
           "ratio_run_s": (round(results[1]["run_s"] / results[0]["run_s"], 3)
                           if len(results) == 2 else None),
           "load_average_after": os.getloadavg()}
    write_results(__file__, out)
    if args.json:
        print(json.dumps(out, indent=1))
        return
    for r in results:
        print(f"{r['order']:12} wall {r['wall_s']:7.1f} s  run {r['run_s']:7.1f} s  "
              f"generations {r['generations']} ({r['generation_s']} s)  "
              f"judge selection {r['judge_select_s']} s")
        print("  last unit per strategy (s after start): "
              + ", ".join(f"{k} {v}" for k, v in r["strategy_last_unit_s"].items()))
    print(f"run time ratio {orders[-1]} / {orders[0]}: {out['ratio_run_s']}")
    print(f"same traces and metrics.json: {same}")


if __name__ == "__main__":
    main()
