"""The fit's worker processes (``junction.learned.grid``, loky's pool) as a user meets
them, on real processes: a worker killed by a signal mid-fit, Ctrl-C while the workers
start, a parent that ends at once, a job that raises, and ``JUNCTION_FIT_WORKERS``
checked before a run starts.

Run as a script, this file is the parent process of one case, for the tests below and for
``bench/checks/fault_lines.py`` (any checkout's ``junction`` on ``PYTHONPATH``)::

    python tests/test_fit_workers.py kill     # SIGKILL one worker mid-search
    python tests/test_fit_workers.py sigint   # SIGINT to the process group as workers start
    python tests/test_fit_workers.py exit     # os._exit(130) while workers hold jobs

Each prints ``workers: PIDS`` and then ``left: PIDS`` (workers still alive when it ends;
``exit`` prints no ``left``) on standard output, and on standard error only what a user
would see: the one error line (``kill``), ``interrupted`` (``sigint``), nothing (``exit``).
The ``sigint`` case sends SIGINT to its whole process group, as a terminal's Ctrl-C does:
start it in a session of its own (``setsid``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
JUNCTION = str(Path(sys.executable).parent / "junction")


def _jobs(count: int, size: int = 40) -> list:
    """``count`` search jobs, one random joint problem of ``size`` candidates each
    (``junction.select.instances.random_problem``, seeds 0, 1, ...)."""
    from junction.select.instances import random_problem

    jobs = []
    for seed in range(count):
        p = random_problem(size, seed, tightness=0.4)
        jobs.append((p.contexts, p.tools, p.budget,
                     [(dict(p.unary), dict(p.interactions))], "optimal"))
    return jobs


def _workers() -> list:
    """This process's fit workers that are alive: loky's, or the pool's before it
    (``serve_stdio``)."""
    import psutil

    found = []
    for child in psutil.Process().children():
        try:
            line = " ".join(child.cmdline())
            if child.status() != psutil.STATUS_ZOMBIE and ("popen_loky_posix" in line
                                                           or "serve_stdio" in line):
                found.append(child)
        except psutil.Error:
            continue
    return found


def _pids(procs) -> str:
    return " ".join(str(p.pid) for p in procs)


def _case(kind: str) -> int:
    from junction.errors import JunctionError
    from junction.learned import grid

    jobs = _jobs(400)
    # Python's own Ctrl-C, whatever this process inherited (a pytest-xdist worker's children
    # start with SIGINT ignored)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if kind == "kill":
        grid.solve_all(jobs[:4], 2)  # the workers started and warm
        victims = _workers()
        print(f"workers: {_pids(victims)}", flush=True)
        killed: list[float] = []

        def kill() -> None:
            time.sleep(1.0)
            killed.append(time.monotonic())
            os.kill(victims[0].pid, signal.SIGKILL)

        threading.Thread(target=kill, daemon=True).start()
        status = 0
        try:
            grid.solve_all(jobs, 2)
        except JunctionError as exc:
            print(f"error: {exc}", file=sys.stderr, flush=True)
            status = 1
        if killed:
            print(f"seen after: {time.monotonic() - killed[0]:.1f} s", flush=True)
        time.sleep(0.2)
        print(f"left: {_pids(_workers())}", flush=True)
        return status
    if kind == "sigint":
        sent: list[float] = []

        def interrupt() -> None:  # the moment a worker has been exec'd: it is starting
            while not _workers():
                time.sleep(0.002)
            print(f"workers: {_pids(_workers())}", flush=True)
            sent.append(time.monotonic())
            os.killpg(os.getpgrp(), signal.SIGINT)

        threading.Thread(target=interrupt, daemon=True).start()
        try:  # on a loaded machine the first search may end before the thread sees the
            for _ in range(20):  # workers: search again until the signal lands in one
                grid.solve_all(jobs, 2)
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr, flush=True)
        if sent:
            print(f"stopped after: {time.monotonic() - sent[0]:.1f} s", flush=True)
        time.sleep(0.2)
        print(f"left: {_pids(_workers())}", flush=True)
        return 130
    if kind == "exit":
        def leave() -> None:
            while len(_workers()) < 2:
                time.sleep(0.05)
            time.sleep(1.5)
            print(f"workers: {_pids(_workers())}", flush=True)
            os._exit(130)

        threading.Thread(target=leave, daemon=True).start()
        grid.solve_all(jobs * 20, 2)
        return 0
    raise SystemExit(f"unknown case {kind!r}; cases: kill, sigint, exit")


def _run_case(kind: str) -> tuple[subprocess.CompletedProcess, list[int]]:
    """This file as the parent of case ``kind``, in a session of its own; its result and
    the worker PIDs it printed."""
    proc = subprocess.run([sys.executable, __file__, kind], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, start_new_session=True)
    workers = [int(p) for line in proc.stdout.splitlines() if line.startswith("workers:")
               for p in line.split()[1:]]
    return proc, workers


def _alive(pids: list[int], wait_s: float = 30.0) -> list[int]:
    """Those of ``pids`` still running (not zombies) once ``wait_s`` seconds have passed
    or none is left."""
    deadline = time.monotonic() + wait_s
    alive = pids
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = [p for p in alive if _running(p)]
    return alive


def _running(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie (``/proc/PID/stat``)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _left(proc: subprocess.CompletedProcess) -> list[int]:
    """The worker PIDs the case found still running as it ended."""
    line = next(line for line in proc.stdout.splitlines() if line.startswith("left:"))
    return [int(p) for p in line.split()[1:]]


def test_a_worker_killed_mid_fit_is_one_line_naming_the_signal_and_nothing_is_left():
    # before (the home-made pool): "a fit worker process (pid N) stopped (exit status
    # None): EOFError", seen only when the search reached that job's turn
    proc, workers = _run_case("kill")
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == ("error: a fit worker process was killed by SIGKILL; "
                           "the fit stopped\n"), proc.stderr
    assert len(workers) == 2
    assert _left(proc) == []  # the other worker was stopped with the pool
    assert _alive(workers) == []


def test_ctrl_c_while_the_workers_start_prints_no_fatal_error_and_leaves_none():
    # before: a worker still importing Python's site died with "Fatal Python error:
    # init_import_site: Failed to import the site module ... KeyboardInterrupt"
    proc, workers = _run_case("sigint")
    assert proc.returncode == 130, proc.stderr
    assert "Fatal Python error" not in proc.stderr
    assert proc.stderr == "interrupted\n", proc.stderr
    assert workers
    assert _left(proc) == []
    assert _alive(workers) == []


def test_workers_end_quietly_when_their_parent_exits_mid_search():
    """A parent ended at once (``os._exit``) while its workers hold jobs: each worker exits
    on its own, without a word. What may reach standard error is loky's resource tracker
    removing the pool's semaphores that the parent left (its one warning, two lines);
    ``flows.interrupts.exit_now`` ends the trackers first, so a run's Ctrl-C never shows
    it."""
    proc, workers = _run_case("exit")
    assert proc.returncode == 130, proc.stderr
    assert len(workers) == 2
    assert _alive(workers) == []
    assert "Traceback" not in proc.stderr
    assert all("resource_tracker: There appear to be" in line or line == "  warnings.warn("
               for line in proc.stderr.splitlines()), proc.stderr


def test_a_job_error_keeps_its_type_and_the_worker_traceback():
    """A ``SelectionError`` raised by a job on a worker process is raised as itself (the
    type it has in one process), its cause the worker's traceback; the pool's workers are
    stopped with it, and the next search starts new ones."""
    from junction.errors import SelectionError
    from junction.learned import grid

    jobs = _jobs(6, size=12)
    contexts, tools, budget, variants, search = jobs[3]
    unary = dict(variants[0][0])
    unary[next(iter(unary))] = float("nan")
    bad = [*jobs[:3], (contexts, tools, budget, [(unary, variants[0][1])], search), *jobs[4:]]
    with pytest.raises(SelectionError, match="must be finite, got nan"):
        grid.solve_all(bad, 1)
    with pytest.raises(SelectionError, match="must be finite, got nan") as raised:
        grid.solve_all(bad, 2)
    assert "in solve_job" in str(raised.value.__cause__)  # the worker's traceback
    assert _workers() == []
    assert grid.solve_all(jobs, 2) == [grid.solve_job(job) for job in jobs]
    grid.shutdown_workers()
    assert _alive([p.pid for p in _workers()], wait_s=10) == []


def test_idle_workers_exit_and_the_next_search_starts_new_ones(monkeypatch):
    """Workers left idle for ``IDLE_TIMEOUT_S`` (1 s here) exit on their own; the pool
    starts new ones for the next search, with the same selections."""
    from junction.learned import grid

    grid.shutdown_workers()
    monkeypatch.setattr(grid, "IDLE_TIMEOUT_S", 1.0)
    jobs = _jobs(4, size=12)
    alone = [grid.solve_job(job) for job in jobs]
    assert grid.solve_all(jobs, 2) == alone
    first = [p.pid for p in _workers()]
    assert len(first) == 2
    assert _alive(first, wait_s=30) == []
    assert grid.solve_all(jobs, 2) == alone
    assert _workers()
    grid.shutdown_workers()


def _bench(env_value: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(JUNCTION_WAREHOUSE=str(tmp_path / "wh"), JUNCTION_REPORTS=str(tmp_path / "rep"),
               JUNCTION_STATE_DIR=str(tmp_path / "state"), JUNCTION_FIT_WORKERS=env_value,
               PREFECT_HOME=str(tmp_path / "prefect"), COLUMNS="200")
    return subprocess.run([JUNCTION, "bench", "--suite", "coupling", "--strategy", "exact",
                           *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.flow
def test_a_bad_fit_worker_count_is_one_line_before_the_run_starts(tmp_path):
    # before: on τ a unit failure after 32 s; on other suites ignored. Here a suite with
    # no learned strategy: the variable is checked for every run
    for value in ("abc", "0", "-1"):
        out = _bench(value, tmp_path)
        assert out.returncode == 1, out.stderr[-2000:]
        cpus = len(os.sched_getaffinity(0))
        assert out.stderr == (f"error: JUNCTION_FIT_WORKERS must be a whole number >= 1 (at "
                              f"most the {cpus} CPUs this process may use; unset: {cpus}), "
                              f"got {value!r}\n"), out.stderr[-2000:]
        assert not (tmp_path / "wh" / "traces").exists()
        assert not any((tmp_path / "prefect").glob("*"))  # Prefect never started


@pytest.mark.flow
def test_a_fit_worker_count_past_the_cpus_is_capped_with_one_warning(tmp_path, monkeypatch):
    # before: JUNCTION_FIT_WORKERS=64 on 2 cores started 64 processes without a word. The
    # run is stopped by the last check before Prefect (an agent server nobody serves), so
    # the warning is seen at the start and nothing runs
    from junction.learned.grid import check_fit_workers, fit_workers

    cpus = len(os.sched_getaffinity(0))
    out = _bench(str(cpus + 62), tmp_path, "--agent-url", "http://127.0.0.1:9/v1",
                 "--agent-model", "any", "--agent-check-timeout", "1")
    assert out.returncode == 1, out.stderr[-2000:]
    lines = out.stderr.splitlines()
    assert lines[0] == (f"warning: JUNCTION_FIT_WORKERS={cpus + 62} is more than the {cpus} "
                        f"CPUs this process may use: a fit runs on {cpus} worker processes")
    assert len(lines) == 2 and lines[1].startswith("error: agent server"), out.stderr
    assert not any((tmp_path / "prefect").glob("*"))
    monkeypatch.setenv("JUNCTION_FIT_WORKERS", str(cpus + 62))
    assert fit_workers() == cpus  # silent: the run's start has said it
    with pytest.warns(UserWarning, match="JUNCTION_FIT_WORKERS"):
        assert check_fit_workers() == cpus


if __name__ == "__main__":
    sys.exit(_case(sys.argv[1] if len(sys.argv) > 1 else ""))
