"""Faults as a new user meets them (issue 44): seconds to the last line, stderr lines, and
what is left running, for each case, on real processes, in one run.

Cases: (1) ``--agent-url`` at a server that accepts and never answers; (2) a τ folder none
of whose tasks can be built (``--tau2-data``); (3) two Ctrl-C while the report is written
(the run's status after); (4) a successful ``--runner dask --workers 2`` run, and Ctrl-C
to the whole process group of one; (5) Ctrl-C while the temporary server starts; (6)
``junction report`` of an interrupted run. Each case runs in its own temporary warehouse,
state and Prefect home; the τ case needs the fixture under ``tests/data/tau2_fixture``.

Usage: ``.venv/bin/python bench/fault_lines.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
JUNCTION = str(Path(sys.executable).parent / "junction")
SILENT = ("import socket\ns=socket.socket();s.bind(('127.0.0.1',0));s.listen(64)\n"
          "print(s.getsockname()[1],flush=True)\nheld=[]\nwhile True: held.append(s.accept())")


def _env(base: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(JUNCTION_WAREHOUSE=str(base / "wh"), JUNCTION_REPORTS=str(base / "rep"),
               JUNCTION_STATE_DIR=str(base / "st"), PREFECT_HOME=str(base / "pf"))
    return env


def _timed(env, *args) -> tuple[float, int, list[str]]:
    t0 = time.monotonic()
    out = subprocess.run([JUNCTION, *args], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=3600)
    return time.monotonic() - t0, out.returncode, out.stderr.splitlines()


def _interrupted(env, args, ready, signals=1, group=False):
    """Start ``junction *args``, wait for ``ready(proc)``, send SIGINT ``signals`` times:
    (seconds from the first signal to exit, status, stderr lines, descendants alive)."""
    proc = subprocess.Popen([JUNCTION, *args], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    while not ready(proc):
        if proc.poll() is not None:
            break
        time.sleep(0.002)
    started = psutil.Process(proc.pid).children(recursive=True) if proc.poll() is None else []
    t0 = time.monotonic()
    for i in range(signals):
        (os.killpg if group else os.kill)(proc.pid, signal.SIGINT)
        if i + 1 < signals:
            time.sleep(0.05)
    try:
        err = proc.communicate(timeout=300)[1]
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        err = proc.communicate()[1] + "\n(killed after 300 s)"
    seconds = time.monotonic() - t0
    left = [c.pid for c in started if c.is_running() and c.status() != "zombie"]
    return seconds, proc.returncode, err.splitlines(), left


def _row(case: str, seconds: float, code: int, lines: list[str], extra: str = "") -> None:
    last = (lines[-1] if lines else "(none)")[:110]
    print(f"| {case} | {seconds:.1f} | {code} | {len(lines)} | {extra} | {last} |")


def main() -> int:
    print("| case | seconds to the line | exit | stderr lines | also | last line |")
    print("|---|---|---|---|---|---|")
    bench = ("bench", "--suite", "coupling", "--strategy", "exact", "--budget-scale", "1")
    with tempfile.TemporaryDirectory(prefix="junction-faults-") as tmp:
        base = Path(tmp)
        silent = subprocess.Popen([sys.executable, "-c", SILENT], stdout=subprocess.PIPE,
                                  text=True)
        try:
            url = f"http://127.0.0.1:{int(silent.stdout.readline())}/v1"
            _row("1 silent agent server", *_timed(_env(base / "1"), *bench, "--agent-url", url,
                                                  "--agent-model", "m"))
        finally:
            silent.kill()

        folder = base / "tau2"
        shutil.copytree(ROOT / "tests" / "data" / "tau2_fixture", folder)
        for f in (folder / "tasks").iterdir():
            raw = json.loads(f.read_text())
            raw["required_documents"] = ["doc_gone_001"]
            f.write_text(json.dumps(raw))
        _row("2 τ folder, no task buildable", *_timed(
            _env(base / "2"), "bench", "--suite", "tau2-banking", "--strategy", "exact",
            "--tau2-data", str(folder)))

        env = _env(base / "3")
        reports = base / "3" / "rep"
        s, code, lines, _ = _interrupted(env, [*bench, "--run-id", "rep"],
                                         lambda p: bool(list(reports.glob(".rep.tmp-*"))),
                                         signals=2)
        status = json.loads((base / "3" / "wh" / "runs" / "rep.json").read_text())["status"]
        _row("3 two Ctrl-C in the report", s, code, lines, f"run {status}")

        dask = ("bench", "--suite", "synthetic", "--strategy", "exact", "--strategy",
                "fixed_split", "--batch-size", "5", "--runner", "dask", "--workers", "2")
        _row("4a dask run, 2 workers, success", *_timed(_env(base / "4a"), *dask[:-4],
                                                         "--size", "20", *dask[-4:]))
        traces = base / "4b" / "wh" / "traces"
        s, code, lines, left = _interrupted(
            _env(base / "4b"), list(dask),
            lambda p: len(list(traces.rglob("*.parquet"))) >= 2, group=True)
        _row("4b dask Ctrl-C (process group)", s, code, lines, f"{len(left)} left running")

        def server_starting(proc) -> bool:
            try:
                kids = psutil.Process(proc.pid).children(recursive=True)
                return any("uvicorn" in " ".join(k.cmdline()) for k in kids)
            except psutil.Error:
                return False

        s, code, lines, left = _interrupted(_env(base / "5"), list(bench), server_starting,
                                            group=True)
        _row("5 Ctrl-C as the server starts", s, code, lines, f"{len(left)} left running")

        env = _env(base / "6")
        _interrupted(env, [*bench, "--run-id", "cut"],
                     lambda p: (base / "6" / "wh" / "runs" / "cut.json").exists())
        _row("6 report of an interrupted run", *_timed(env, "report", "cut"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
