"""Where `make test`'s minutes go: wall and CPU seconds per test file and per test, and the
CPU of the Python processes the tests start.

Runs the suite as `make test` does (pytest-xdist workers, `--dist loadfile
--no-loadscope-reorder`, the Makefile's Prefect settings) with this file as a pytest plugin
(`-p suite_profile`, bench/perf/ on PYTHONPATH). Per test it records the wall time and the CPU
time (user + sys, `resource.getrusage`, seconds) of the worker process itself and of the
child processes the worker reaped meanwhile. With `--subprocesses`, a `sitecustomize`
module on PYTHONPATH makes every Python process the tests start write its own CPU at exit
(its arguments, its CPU and its reaped children's); processes ended by a signal (servers)
or by `os._exit` write nothing.

A child's CPU counts when it is reaped: a server that a fixture stops at the end of a file
or session counts there, and a child nobody waited for can count in a later test
(`subprocess` reaps finished children at its next start), so per test the children column
can land on the wrong test; per file it mostly does not. The totals are exact. A
process's test is the one running when the environment it was given was copied: a module
fixture's copy names the module's first test.

    .venv/bin/python bench/perf/suite_profile.py [--workers 2] [--top 25] [--subprocesses]
        [-- PYTEST ARGS]

Prints the totals (wall, CPU, cores busy), a table per file (wall summed over its tests,
worker CPU, children CPU), the tests with the most worker CPU and, with
`--subprocesses`, the processes with the most CPU. Exit status: pytest's.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_OUT = "JUNCTION_SUITE_PROFILE_DIR"

_SITECUSTOMIZE = f'''\
import atexit, json, os, resource, sys, time
_t0 = time.monotonic()
def _record():
    s, c = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    row = {{"pid": os.getpid(), "ppid": os.getppid(), "argv": sys.argv[:10],
           "wall": time.monotonic() - _t0,
           "cpu": s.ru_utime + s.ru_stime, "children": c.ru_utime + c.ru_stime,
           "test": os.environ.get("PYTEST_CURRENT_TEST", "")}}
    try:
        with open(os.path.join(os.environ["{_OUT}"], "processes.jsonl"), "a") as f:
            f.write(json.dumps(row) + "\\n")
    except (KeyError, OSError):
        pass
atexit.register(_record)
'''


# ------------------------------------------------------------------ the pytest plugin

def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime


_ROWS: list[dict] = []

try:
    import pytest
except ImportError:  # the plugin's hooks are only used inside pytest
    pytest = None  # type: ignore[assignment]

if pytest is not None:
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item, nextitem):
        """Wall and CPU seconds of one test, setup and teardown included."""
        wall, (own, kids) = time.monotonic(), _cpu()
        yield
        own2, kids2 = _cpu()
        _ROWS.append({"id": item.nodeid, "wall": time.monotonic() - wall,
                      "cpu": own2 - own, "children": kids2 - kids})


def pytest_sessionfinish(session):
    """Each worker (and the controller) writes its rows and its whole-session CPU."""
    folder = os.environ.get(_OUT)
    if not folder:
        return
    own, kids = _cpu()
    name = os.environ.get("PYTEST_XDIST_WORKER", "controller")
    Path(folder, f"worker-{name}.json").write_text(json.dumps(
        {"rows": _ROWS, "cpu": own, "children": kids}))


# ------------------------------------------------------------------ the report

def _environment(folder: Path, subprocesses: bool) -> dict:
    from flows.environment import configure_prefect_env

    configure_prefect_env()  # Prefect's home and offline settings, as the Makefile's exports
    env = dict(os.environ)
    paths = [str(Path(__file__).resolve().parent)]  # this file, as the plugin
    if subprocesses:
        (folder / "site").mkdir()
        (folder / "site" / "sitecustomize.py").write_text(_SITECUSTOMIZE)
        paths.insert(0, str(folder / "site"))
    env["PYTHONPATH"] = os.pathsep.join([*paths, *filter(None, [env.get("PYTHONPATH")])])
    env[_OUT] = str(folder)
    return env


def _print_report(folder: Path, wall: float, cpu: float, top: int, pytest_pid: int) -> dict:
    """Print the tables; their figures (totals, per file, the tests with most CPU)."""
    workers = [json.loads(p.read_text()) for p in sorted(folder.glob("worker-gw*.json"))
               or sorted(folder.glob("worker-*.json"))]
    rows = [row for w in workers for row in w["rows"]]
    print(f"pytest wall {wall:.0f} s; CPU of the whole run {cpu:.0f} s "
          f"({cpu / wall:.2f} cores busy on average, {os.cpu_count()} cores)")
    for i, w in enumerate(workers):
        print(f"  worker {i}: tests' wall {sum(r['wall'] for r in w['rows']):.0f} s, "
              f"own CPU {w['cpu']:.0f} s, reaped children {w['children']:.0f} s")
    files: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for row in rows:
        acc = files[row["id"].split("::")[0]]
        acc[0] += row["wall"]
        acc[1] += row["cpu"]
        acc[2] += row["children"]
    print("\n| file | wall s | worker CPU s | children CPU s |\n|---|---|---|---|")
    for name, (w, c, k) in sorted(files.items(), key=lambda kv: -kv[1][0])[:top]:
        print(f"| {name} | {w:.0f} | {c:.0f} | {k:.0f} |")
    figures = {"wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
               "cores_busy": round(cpu / wall, 2) if wall else None,
               "files": {name: {"wall_s": round(w, 1), "worker_cpu_s": round(c, 1),
                                "children_cpu_s": round(k, 1)}
                         for name, (w, c, k) in sorted(files.items())},
               "top_tests_cpu": [{"test": r["id"], "wall_s": round(r["wall"], 1),
                                  "cpu_s": round(r["cpu"], 1)}
                                 for r in sorted(rows, key=lambda r: -r["cpu"])[:top]]}
    print("\n| test (most worker CPU) | wall s | worker CPU s |\n|---|---|---|")
    for row in sorted(rows, key=lambda r: -r["cpu"])[:top]:
        print(f"| {row['id']} | {row['wall']:.1f} | {row['cpu']:.1f} |")
    processes = folder / "processes.jsonl"
    if processes.exists():
        procs = [json.loads(line) for line in processes.read_text().splitlines()]
        # not pytest itself nor its workers (the workers' CPU is in the tables above)
        procs = [p for p in procs if pytest_pid not in (p["pid"], p["ppid"])]
        print(f"\n{len(procs)} Python processes started by tests wrote their CPU: "
              f"{sum(p['cpu'] for p in procs):.0f} s in themselves (their children, "
              "servers among them, write rows of their own when they are Python and exit)")
        print("\n| process (most CPU) | CPU s | children CPU s | wall s | test |"
              "\n|---|---|---|---|---|")
        for p in sorted(procs, key=lambda p: -(p["cpu"] + p["children"]))[:top]:
            argv = " ".join(Path(a).name if i == 0 else a for i, a in enumerate(p["argv"]))
            print(f"| `{argv[:90]}` | {p['cpu']:.1f} | {p['children']:.1f} | {p['wall']:.1f} "
                  f"| {p['test'].split(' ')[0][:80]} |")
        by_file: dict[str, dict[str, float]] = defaultdict(
            lambda: {"n": 0, "cpu_s": 0.0, "children_cpu_s": 0.0})
        for p in procs:
            row = by_file[p["test"].split("::")[0] or "(no test)"]
            row["n"] += 1
            row["cpu_s"] += p["cpu"]
            row["children_cpu_s"] += p["children"]
        print("\n| file (most process CPU) | processes | their CPU s | their children's CPU s |"
              "\n|---|---|---|---|")
        ranked = sorted(by_file.items(), key=lambda kv: -(kv[1]["cpu_s"] + kv[1]["children_cpu_s"]))
        for name, row in ranked[:top]:
            print(f"| {name} | {row['n']:.0f} | {row['cpu_s']:.1f} | {row['children_cpu_s']:.1f} |")
        figures["processes"] = len(procs)
        figures["processes_cpu_s"] = round(sum(p["cpu"] for p in procs), 1)
        figures["processes_by_file"] = {name: {k: round(v, 1) for k, v in row.items()}
                                        for name, row in ranked}
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2, help="pytest-xdist workers (2)")
    parser.add_argument("--top", type=int, default=25, help="rows per table (25)")
    parser.add_argument("--subprocesses", action="store_true",
                        help="also record every Python process the tests start")
    parser.add_argument("pytest_args", nargs="*", help="more pytest arguments (after --)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="suite-profile-") as tmp:
        folder = Path(tmp)
        command = [sys.executable, "-m", "pytest", "-p", "suite_profile",
                   *(["-n", str(args.workers), "--dist", "loadfile", "--no-loadscope-reorder"]
                     if args.workers else []), *args.pytest_args]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.monotonic()
        with open(folder / "pytest.log", "w") as log:
            proc = subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                    env=_environment(folder, args.subprocesses))
            proc.wait()
        wall = time.monotonic() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        print(f"pytest exit status {proc.returncode}: {' '.join(command[1:])}")
        if proc.returncode:
            print("".join((folder / "pytest.log").read_text().splitlines(True)[-30:]))
        figures = _print_report(folder, wall, cpu, args.top, proc.pid)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: results.py
    from results import write_results

    write_results(__file__, {"pytest_exit": proc.returncode, **figures})
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
