"""The temporary Prefect server's start, in a fresh process, on a new home against a home
that has its template (``flows.server``: the first server on a home migrates a database and
registers Prefect's block types, later ones start on a copy of that database), and the
wall time of a one-unit ``junction bench`` run both ways. Alternating, in one run, so load
affects both columns alike.

Each round uses a new temporary ``PREFECT_HOME``: its first start is "new home", the next
one "from template". Seconds are ``flows.server.start()``'s wall time in the child process
(imports excluded), and the whole command's wall time for ``junction bench --suite
coupling --strategy exact --budget-scale 1``.

Usage: ``.venv/bin/python bench/perf/prefect_start.py [--rounds N]`` (default 3).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: results.py
from results import write_results  # noqa: E402

JUNCTION = str(Path(sys.executable).parent / "junction")
START = ("import os, time\n"
         "from flows.environment import configure_prefect_env\n"
         "configure_prefect_env()\n"
         "from flows import server\n"
         "began = time.perf_counter(); server.start(); took = time.perf_counter() - began\n"
         "server.stop(); print(f'{took:.3f}', flush=True); os._exit(0)\n")


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(PREFECT_HOME=str(home / "prefect"), JUNCTION_STATE_DIR=str(home / "state"),
               JUNCTION_WAREHOUSE=str(home / "wh"), JUNCTION_REPORTS=str(home / "rep"))
    return env


def _start_s(env: dict[str, str]) -> float:
    done = subprocess.run([sys.executable, "-c", START], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=False)
    if done.returncode:
        sys.exit(f"server start failed: {done.stderr[-2000:]}")
    return float(done.stdout.split()[-1])


def _bench_s(env: dict[str, str], run_id: str) -> float:
    began = time.perf_counter()
    done = subprocess.run([JUNCTION, "bench", "--suite", "coupling", "--strategy", "exact",
                           "--budget-scale", "1", "--run-id", run_id], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=False)
    if done.returncode:
        sys.exit(f"junction bench failed: {done.stderr[-2000:]}")
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rows: dict[str, list[float]] = {k: [] for k in
                                    ("start, new home", "start, from template",
                                     "bench, new home", "bench, from template")}
    for i in range(args.rounds):
        for kind, measure in (("start", _start_s), ("bench", None)):
            home = Path(tempfile.mkdtemp(prefix="prefect-start-"))
            try:
                env = _env(home)
                if measure is not None:
                    first, second = measure(env), measure(env)
                else:
                    first, second = _bench_s(env, f"a{i}"), _bench_s(env, f"b{i}")
                rows[f"{kind}, new home"].append(first)
                rows[f"{kind}, from template"].append(second)
                print(f"round {i + 1} {kind}: new home {first:.2f} s, from template "
                      f"{second:.2f} s", flush=True)
            finally:
                shutil.rmtree(home, ignore_errors=True)
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")
    print("| measure | median s | runs (s) |\n|---|---|---|")
    for name, values in rows.items():
        print(f"| {name} | {statistics.median(values):.2f} | "
              f"{', '.join(f'{v:.2f}' for v in values)} |")
    write_results(__file__, {name: {"median_s": round(statistics.median(values), 2),
                                    "runs_s": [round(v, 2) for v in values]}
                             for name, values in rows.items()})


if __name__ == "__main__":
    main()
