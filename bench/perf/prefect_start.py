"""The temporary Prefect server's start, in a fresh process, on a new home against a home
that has its template (``flows.server``: the first server on a home migrates a database and
registers Prefect's block types, later ones start on a copy of that database), and the
wall time of a one-unit ``junction bench`` run both ways. Alternating, in one run, so load
affects both columns alike.

Each round uses a new temporary ``PREFECT_HOME``: its first start is "new home", the next
one "from template". Seconds are ``flows.server.start()``'s wall time in the child process
(imports excluded), and the whole command's wall time for ``junction bench --suite
coupling --strategy exact --budget-scale 1``.

Then, on a home with its template, the services that only record what a run did
(``flows.server.discarded_database_settings``: task run recorder, event persister,
triggers, the event and log streams out) off, as ``start`` runs them, against on (each
setting given as ``true`` in the environment, where the user's value stands): CPU seconds
(user + system, the ``junction`` process and the server it reaps, ``RUSAGE_CHILDREN``) and
wall seconds of ``junction bench --suite synthetic --suite coupling --size 12 --strategy
exact --strategy fixed_split --budget-scale 0.5 --budget-scale 1`` (8 units), alternating.

With ``--baseline PATH`` (an older checkout, e.g. ``git worktree add /tmp/old COMMIT``),
the same eight-unit bench also runs on that checkout's code (``PYTHONPATH=PATH:PATH/typings``,
this environment's packages), alternating with this checkout's, on the same home: CPU
and wall seconds of each, to compare two ways of starting the server side by side.

Usage: ``.venv/bin/python bench/perf/prefect_start.py [--rounds N] [--baseline PATH]``
(default 3 rounds).
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
from results import measured_run, write_results  # noqa: E402

from flows.server import RECORDING_SETTINGS  # noqa: E402

RECORDING = tuple(names[0] for names in RECORDING_SETTINGS)
"""The settings ``flows.server.discarded_database_settings`` turns off (their Prefect 3 names)."""

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



EIGHT_UNITS = ["--suite", "synthetic", "--suite", "coupling", "--size", "12", "--strategy",
               "exact", "--strategy", "fixed_split", "--budget-scale", "0.5",
               "--budget-scale", "1"]


def _bench_cpu(env: dict[str, str], run_id: str) -> tuple[float, float]:
    """(CPU s, wall s) of an eight-unit ``junction bench`` (module docstring)."""
    done, cpu, wall = measured_run([JUNCTION, "bench", *EIGHT_UNITS, "--run-id", run_id],
                                   cwd=ROOT, env=env)
    if done.returncode:
        sys.exit(f"junction bench failed: {done.stderr[-2000:]}")
    return cpu, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", type=Path, default=None,
                        help="an older checkout to compare the eight-unit bench with")
    args = parser.parse_args()
    if args.baseline is not None and not (args.baseline / "flows" / "server.py").is_file():
        parser.error(f"--baseline {args.baseline}: not a Junction checkout (no flows/server.py)")
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
    home = Path(tempfile.mkdtemp(prefix="prefect-start-"))
    try:
        env = _env(home)
        _bench_s(env, "template")  # the home's template
        for i in range(args.rounds):
            for on in (False, True):
                kind = "on" if on else "off"
                cpu, wall = _bench_cpu({**env, **dict.fromkeys(RECORDING, "true")} if on
                                       else env, f"{kind}{i}")
                rows.setdefault(f"bench of 8 units, recording services {kind}, CPU", []
                                ).append(cpu)
                rows.setdefault(f"bench of 8 units, recording services {kind}, wall", []
                                ).append(wall)
                print(f"round {i + 1} recording services {kind}: CPU {cpu:.2f} s, wall "
                      f"{wall:.2f} s", flush=True)
            if args.baseline is not None:
                code = str(args.baseline.resolve())
                older = {**env, "PYTHONPATH": f"{code}:{code}/typings"}
                for side, side_env in (("baseline", older), ("this checkout", env)):
                    cpu, wall = _bench_cpu(side_env, f"{side[0]}{i}")
                    rows.setdefault(f"bench of 8 units, {side}, CPU", []).append(cpu)
                    rows.setdefault(f"bench of 8 units, {side}, wall", []).append(wall)
                    print(f"round {i + 1} {side}: CPU {cpu:.2f} s, wall {wall:.2f} s",
                          flush=True)
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
