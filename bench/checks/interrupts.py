"""Faults a user causes during `junction bench`, timed: how long to exit, how many lines.

    python bench/checks/interrupts.py [--other PATH] [--fault NAME ...] [--after N] [--limit S]
                               [--repeat N] [--load K]

For each fault, a real `junction bench --suite synthetic --strategy exact --strategy
fixed_split --batch-size 5` (72 units) runs in a process group of its own, with a
temporary warehouse, state folder and Prefect home. Once N unit trace files exist (default
5) the fault is applied:

- ``sigint``: SIGINT to the `junction` process;
- ``sigterm``: SIGTERM to it (what `kill` and most supervisors send);
- ``group``: SIGINT to its process group (Ctrl-C at a terminal);
- ``twice``: SIGINT to the group, then again 0.2 s later;
- ``server``: SIGKILL to the temporary Prefect server (the uvicorn child);
- ``unit``: none; the units of one strategy are made to fail (a file stands where their
  timings folder goes: ``FileExistsError``, an ``OSError``, so Prefect retries each
  twice, 1 s apart).

Printed per fault and checkout: seconds from the fault to exit (for ``unit``, from the
first trace file), exit status, stderr lines, stderr's last line (cut), the run's status
in runs/<run_id>.json, trace files written, those written after the signal (``+after``;
the count at the signal is taken while the process is stopped: SIGSTOP, ``waitpid``
with ``WUNTRACED`` until every thread has stopped, the count, the signal, SIGCONT; at most
the thread runner's 4 units in flight may finish after it), ``.tmp`` files left, and
whether a process of its group (the server, a worker) was still alive 0.5 s after it
exited. ``--repeat N`` runs each fault N times per checkout, alternating checkouts;
``--load K`` keeps K busy-looping processes running meanwhile (a loaded machine, as under
``make test``, where Python's signal handler waits longest for the main thread). A process still
running after ``--limit`` seconds (default 120) is killed and shown as ``>LIMIT``.
``--other PATH`` runs the same faults on a second checkout (e.g. main, exported with
``git archive``) side by side; both run with this Python and its installed packages, each
from its own folder (``python -m flows.cli``, so that folder's ``flows`` and ``junction``
are imported).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: results.py
from results import write_results  # noqa: E402

FAULTS = ("sigint", "sigterm", "group", "twice", "server", "unit")
ARGS = ["bench", "--suite", "synthetic", "--strategy", "exact", "--strategy", "fixed_split",
        "--batch-size", "5"]
FAILING_STRATEGY = "strategy=fixed_split"
SIGNALLED = ("sigint", "sigterm", "group", "twice")


def _children(pid: int) -> list[int]:
    """Every descendant of ``pid`` (from /proc)."""
    found, frontier = [], [pid]
    while frontier:
        parent = frontier.pop()
        for task in Path(f"/proc/{parent}/task").glob("*"):
            children = ((task / "children").read_text().split()
                        if (task / "children").exists() else [])
            for child in map(int, children):
                found.append(child)
                frontier.append(child)
    return found


def _server_pid(pid: int) -> int | None:
    for child in _children(pid):
        try:
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
        except OSError:
            continue
        if b"uvicorn" in cmdline:
            return child
    return None


def run_fault(checkout: Path, fault: str, after: int, limit: float) -> dict:
    """Run the bench in ``checkout`` and apply ``fault``; return what was measured."""
    base = Path(tempfile.mkdtemp(prefix=f"interrupt-{fault}-"))
    run_id = f"fault-{fault}"
    warehouse = base / "wh"
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(JUNCTION_WAREHOUSE=str(warehouse), JUNCTION_REPORTS=str(base / "rep"),
               JUNCTION_STATE_DIR=str(base / "state"), PREFECT_HOME=str(base / "prefect"),
               COLUMNS="120")
    traces = warehouse / "traces" / f"run_id={run_id}" / "suite=synthetic"
    if fault == "unit":  # a file where a strategy's timings folder goes
        blocker = warehouse / "timings" / f"run_id={run_id}" / "suite=synthetic" / FAILING_STRATEGY
        blocker.parent.mkdir(parents=True)
        blocker.write_text("not a folder")
    stderr_path = base / "stderr.txt"
    with open(stderr_path, "wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "flows.cli", *ARGS, "--run-id", run_id],
                                cwd=checkout, env=env, stdout=subprocess.DEVNULL, stderr=err,
                                start_new_session=True)
        deadline = time.monotonic() + 600
        while len(list(traces.rglob("*.parquet"))) < after and proc.poll() is None:
            if time.monotonic() > deadline:
                break
            time.sleep(0.05)
        at_signal = None
        if fault in SIGNALLED and proc.poll() is None:  # counted at the signal, stopped
            os.kill(proc.pid, signal.SIGSTOP)
            _, status = os.waitpid(proc.pid, os.WUNTRACED)
            if os.WIFSTOPPED(status):
                at_signal = len(list(traces.rglob("*.parquet")))
            else:  # it ended before the stop, and that wait reaped it
                proc.returncode = os.waitstatus_to_exitcode(status)
        t0 = time.monotonic()
        if fault == "sigint":
            os.kill(proc.pid, signal.SIGINT)
        elif fault == "sigterm":
            os.kill(proc.pid, signal.SIGTERM)
        elif fault == "group":
            os.killpg(proc.pid, signal.SIGINT)
        elif fault == "twice":
            os.killpg(proc.pid, signal.SIGINT)
            os.kill(proc.pid, signal.SIGCONT)
            time.sleep(0.2)
            os.killpg(proc.pid, signal.SIGINT)
        if at_signal is not None:
            os.kill(proc.pid, signal.SIGCONT)
        if fault == "server":
            server = _server_pid(proc.pid)
            if server is not None:
                os.kill(server, signal.SIGKILL)
        try:
            proc.wait(timeout=limit)
            elapsed = f"{time.monotonic() - t0:.1f}"
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            elapsed = f">{limit:g}"
    time.sleep(0.5)  # a server told to stop by the exiting process has had time to end
    left = True
    try:
        os.killpg(proc.pid, 0)
    except ProcessLookupError:
        left = False
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)  # a server or worker left behind
    lines = stderr_path.read_text(errors="replace").splitlines()
    meta_path = warehouse / "runs" / f"{run_id}.json"
    run_status = json.loads(meta_path.read_text()).get("status") if meta_path.exists() else "-"
    written = len(list(traces.rglob("*.parquet")))
    tmp = len(list(warehouse.rglob("*.tmp")))
    return {"fault": fault, "seconds": elapsed, "rc": proc.returncode,
            "stderr_lines": len(lines), "last": (lines[-1] if lines else "")[:90],
            "status": run_status, "units_written": written,
            "after_signal": "-" if at_signal is None else f"+{written - at_signal}",
            "tmp_left": tmp,
            "left": "yes" if left else "no"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--other", type=Path, help="a second checkout to compare")
    parser.add_argument("--fault", action="append", choices=FAULTS)
    parser.add_argument("--after", type=int, default=5, help="trace files before the fault")
    parser.add_argument("--limit", type=float, default=120.0, help="seconds before a kill")
    parser.add_argument("--repeat", type=int, default=1, help="runs per fault and checkout")
    parser.add_argument("--load", type=int, default=0, help="busy-looping processes meanwhile")
    args = parser.parse_args()
    checkouts = [("this", ROOT)] + ([("other", args.other.resolve())] if args.other else [])
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(args.load)]
    runs = []
    try:
        print(f"{'fault':8} {'checkout':8} {'s':>6} {'rc':>4} {'lines':>5} {'status':12} "
              f"{'units':>5} {'+after':>6} {'tmp':>3} {'left':>4}  last stderr line")
        for fault in args.fault or FAULTS:
            for _ in range(args.repeat):
                for name, path in checkouts:
                    r = run_fault(path, fault, args.after, args.limit)
                    print(f"{fault:8} {name:8} {r['seconds']:>6} {r['rc']:>4} "
                          f"{r['stderr_lines']:>5} {r['status']!s:12} "
                          f"{r['units_written']:>5} {r['after_signal']:>6} {r['tmp_left']:>3} "
                          f"{r['left']:>4}  {r['last']}", flush=True)
                    runs.append({"fault": fault, "checkout": name, **r})
    finally:
        for proc in busy:
            proc.kill()
            proc.wait()
    write_results(__file__, {"after": args.after, "load": args.load, "runs": runs})


if __name__ == "__main__":
    main()
