"""The learned run against the lexical one on τ-Knowledge, each on a fresh warehouse.

Runs, one after the other in one sitting, each into its own empty warehouse and reports
folder (a temporary directory), the commands

    junction bench --suite tau2-banking --full --budget-scale 1 --agent-size 0 \
        --strategy exact
    junction bench ... --strategy learned_exact
    junction bench ... --strategy learned_exact --fit-search hybrid

    junction bench ... --strategy learned_coverage

(``exact``: the lexical joint selector, no fit; ``learned_exact``: cross-fitted, 5 folds,
so 5 fits, by the exact λ × τ search, ``optimal``, then by the approximate ``hybrid`` one,
``junction.learned.grid.SEARCHES``; ``learned_coverage``: cross-fitted the same way, its
fit the relevance model alone, ``junction.strategies.coverage``), and prints each
command's wall seconds, its ratio to the lexical run, and the learned runs' retrieval
success (``metrics.json``), side by side. ``--search`` picks the fit searches of
``learned_exact`` (default: optimal and hybrid; ``--search none``: no ``learned_exact``
run), ``--strategy`` the other learned strategies timed (default: learned_coverage).

Usage: ``python bench/perf/learned_run_time.py [--tau2-data PATH] [--search optimal
--search hybrid | --search none] [--strategy learned_coverage]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from junction_datasets import tau2_banking as tb

from junction.learned.grid import OPTIMAL_SEARCH, SEARCHES

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "studies"))
from tau2_anchors import data_arguments

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: results.py
from results import write_results

JUNCTION = Path(sys.executable).with_name("junction")
COMMON = ("bench", "--suite", "tau2-banking", "--full", "--budget-scale", "1",
          "--agent-size", "0")


def timed_run(extra: list[str], data: str, label: str) -> dict:
    """One ``junction bench`` into a fresh warehouse: wall seconds and success rate."""
    with tempfile.TemporaryDirectory(prefix="junction-learned-run-") as tmp:
        cmd = [str(JUNCTION), *COMMON, *extra, "--tau2-data", data,
               "--warehouse", f"{tmp}/warehouse", "--reports", f"{tmp}/reports",
               "--run-id", label]
        t0 = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr}")
        metrics = json.loads(next(Path(tmp, "reports").rglob("metrics.json")).read_text())
    cell = metrics["results"]["tau2-banking"]["budget_scale=1"]
    rates = sorted((name, row["success_rate"]) for name, row in cell.items())
    return {"label": label, "command": " ".join(["junction", *COMMON, *extra]),
            "wall_s": round(wall, 1), "success": rates}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--search", action="append", choices=(*SEARCHES, "none"),
                        help="fit searches of the learned_exact runs (default: optimal, "
                             "hybrid; none: no learned_exact run)")
    parser.add_argument("--strategy", action="append",
                        help="other learned strategies to time (default: learned_coverage)")
    args = data_arguments(parser.description, argv, parser)
    if args is None:
        return 2
    data = os.environ[tb.DATA_ENV]  # data_arguments set it from --tau2-data, or it was set
    runs = [timed_run(["--strategy", "exact"], data, "lexical")]
    for search in args.search or [OPTIMAL_SEARCH, "hybrid"]:
        if search == "none":
            continue
        extra = ["--strategy", "learned_exact"]
        if search != OPTIMAL_SEARCH:
            extra += ["--fit-search", search]
        runs.append(timed_run(extra, data, f"learned-{search}"))
    for name in args.strategy or ["learned_coverage"]:
        runs.append(timed_run(["--strategy", name], data, name))
    base = runs[0]["wall_s"]
    print("τ-Knowledge, every task, budget scale 1, no agent; each on a fresh warehouse:")
    for run in runs:
        run["ratio"] = round(run["wall_s"] / base, 2)
        rates = ", ".join(f"{s} {r:.3f}" for s, r in run["success"])
        print(f"  {run['wall_s']:7.1f} s  {run['ratio']:5.2f}x  {run['command']}  ({rates})")
    write_results(__file__, {"runs": runs})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
