"""Ctrl-C and a busy run id, as a user meets them at the command line.

One real `junction bench` (72 units) is interrupted with SIGINT once it has written a few
units; the asserts on that one run: it exits with status 130 (a 60 s hang guard, not a
measurement: no test asserts a time) and one stderr line saying how far it got and how
to resume; no unit starts after the signal; runs/<run_id>.json says ``interrupted``; every
Parquet file under the traces root reads whole and no temporary file is left; the printed
resume command, run as printed, completes the run with every (task, strategy, budget
scale) exactly once (DuckDB over the Parquet traces). A second writer of a held run id is
refused before anything loads (no state folder, no traces). ``flows.cli_run.resume_command``
and ``junction.evidence.reports.remove_unfinished_report`` are checked on their own.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from flows.cli_run import resume_command
from junction.evidence.store import TraceStore
from tests.helpers import on_session_server

ROOT = Path(__file__).resolve().parent.parent
JUNCTION = shutil.which("junction", path=str(Path(sys.executable).parent))
ARGS = ["--suite", "synthetic", "--strategy", "exact", "--strategy", "fixed_split",
        "--batch-size", "5"]
UNITS = 72  # 60 synthetic tasks / 5 per unit × 2 strategies × 3 budget scales
LINE = re.compile(r"interrupted after (\d+) of 72 units; resume with `(\S*junction bench .*)`")
"""The last line; the program as it was started (.venv/bin/junction where not on PATH)."""


@pytest.fixture(scope="module")
def cli_env(tmp_path_factory):
    """A user's shell: temporary warehouse, reports and state, no server; Prefect's home
    is the session's (the temporary servers of one home each use a database of their own)."""
    base = tmp_path_factory.mktemp("interrupts")
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(JUNCTION_WAREHOUSE=str(base / "wh"), JUNCTION_REPORTS=str(base / "rep"),
               JUNCTION_STATE_DIR=str(base / "state"), COLUMNS="200")
    return env


@pytest.fixture(scope="module")
def interrupted(cli_env):
    """`junction bench ... --run-id sig` sent SIGINT after 3 unit files: (unit files
    written at the signal, counted while the process is stopped; exit status; stderr;
    traces folder). The process gets 60 s to exit (a hang guard, not a measurement: no
    test asserts a time)."""
    traces = Path(cli_env["JUNCTION_WAREHOUSE"]) / "traces" / "run_id=sig"
    proc = subprocess.Popen([JUNCTION, "bench", *ARGS, "--run-id", "sig"], cwd=ROOT,
                            env=cli_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 600
        while len(list(traces.rglob("*.parquet"))) < 3:
            assert proc.poll() is None, proc.stderr.read()[-3000:]
            assert time.monotonic() < deadline, "no unit written in 600 s"
            time.sleep(0.05)
        # the count is the count at the signal: the process is stopped while it is taken
        # (waitpid's WUNTRACED returns once every thread has stopped), the SIGINT is sent
        # while it is stopped, and the thread that resumes first takes it
        os.kill(proc.pid, signal.SIGSTOP)
        _, status = os.waitpid(proc.pid, os.WUNTRACED)
        assert os.WIFSTOPPED(status), status
        written = len(list(traces.rglob("*.parquet")))
        os.kill(proc.pid, signal.SIGINT)
        os.kill(proc.pid, signal.SIGCONT)
        try:
            _, stderr = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            stderr = "(still running after 60 s)"
        return written, proc.returncode, stderr, traces
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_sigint_stops_the_run_at_once_with_one_line(interrupted):
    # at once: no unit starts after the signal; the units in flight (at most the thread
    # runner's 4 workers, flows.runners.task_runner) may finish and be written
    written, code, stderr, traces = interrupted
    assert code == 130, stderr[-3000:]
    done = len(list(traces.rglob("*.parquet")))
    assert written <= done <= written + 4, (written, done)
    assert len(stderr.splitlines()) == 1, stderr[-3000:]
    match = LINE.fullmatch(stderr.splitlines()[-1])
    assert match, stderr
    assert shlex.split(match.group(2))[1:] == ["bench", "--run-id", "sig", *ARGS]


def test_the_interrupted_run_is_marked_and_whole(interrupted, cli_env):
    _, _, stderr, traces = interrupted
    done = int(LINE.fullmatch(stderr.splitlines()[-1]).group(1))
    meta = TraceStore(cli_env["JUNCTION_WAREHOUSE"]).read_run_meta("sig")
    assert meta["status"] == "interrupted"
    assert (meta["units_done"], meta["units_total"]) == (done, UNITS)
    warehouse = Path(cli_env["JUNCTION_WAREHOUSE"])
    assert [p for p in warehouse.rglob("*") if p.name.endswith(".tmp")] == []
    files = sorted(traces.rglob("*.parquet"))
    assert len(files) == done
    for path in files:  # each one whole: 5 rows, its footer readable
        assert pq.read_table(path).num_rows == 5, path


def test_report_and_diff_of_the_interrupted_run_state_its_status(interrupted, cli_env):
    # before: "no run or commit matches 'sig'"
    for argv in (["report", "sig"], ["diff", "sig", "sig"]):
        out = subprocess.run([JUNCTION, *argv], cwd=ROOT, env=cli_env, capture_output=True,
                             text=True, timeout=120)
        assert out.returncode == 1, out.stderr
        assert len(out.stderr.splitlines()) == 1, out.stderr
        assert out.stderr.startswith("error: run sig is interrupted, not completed: "), \
            out.stderr
        # the command itself, options and all (before: "... and the same options")
        # (as the program was started: .venv/bin/junction where the venv is not on PATH)
        assert out.stderr.rstrip().endswith(
            f"junction {shlex.join(['bench', '--run-id', 'sig', *ARGS])}`"), out.stderr
        assert "resume it with `" in out.stderr, out.stderr


def test_the_printed_command_resumes_every_task_exactly_once(interrupted, cli_env,
                                                             prefect_harness):
    _, _, stderr, traces = interrupted
    match = LINE.fullmatch(stderr.splitlines()[-1])
    done, command = int(match.group(1)), shlex.split(match.group(2))
    out = subprocess.run([JUNCTION, *command[1:]], cwd=ROOT,
                         env=on_session_server(cli_env), capture_output=True, text=True,
                         timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "resuming run sig" in out.stdout
    assert f"in {UNITS} units ({done} already done)" in out.stdout
    rows = duckdb.sql(
        "select task_id, strategy, budget_scale, count(*) as n from read_parquet(?) "
        "group by all", params=[str(traces / "**" / "*.parquet")]).fetchall()
    assert len(rows) == 60 * 2 * 3 and {n for *_, n in rows} == {1}
    assert TraceStore(cli_env["JUNCTION_WAREHOUSE"]).read_run_meta("sig")["status"] == "completed"


@pytest.mark.flow
def test_a_second_writer_of_a_held_run_id_is_refused_before_any_work(tmp_path):
    root = tmp_path / "wh"
    env = {**os.environ, "JUNCTION_WAREHOUSE": str(root),
           "JUNCTION_STATE_DIR": str(tmp_path / "state")}
    env.pop("PREFECT_API_URL", None)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from junction.evidence.store import TraceStore\n"
         f"with TraceStore({str(root)!r}).run_lock('busy'):\n"
         "    print('held', flush=True); sys.stdin.read()"],
        cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        out = subprocess.run([JUNCTION, "bench", *ARGS, "--run-id", "busy"], cwd=ROOT,
                             env=env, capture_output=True, text=True, timeout=120)
    finally:
        holder.communicate("", timeout=60)
    assert out.returncode == 1
    assert out.stderr.startswith(f"error: run busy is being written by PID {holder.pid} ")
    assert len(out.stderr.splitlines()) == 1, out.stderr
    # before any work: no suite built, no Prefect home or server, no trace, no log
    assert not (tmp_path / "state").exists() or not any((tmp_path / "state").rglob("*")), \
        sorted((tmp_path / "state").rglob("*"))
    assert not (root / "traces").exists()


_SEEN_IN_A_THREAD = """
import json, os, signal, threading
from flows import interrupts

seen = {}
def worker(key):
    signal.pthread_kill(threading.get_ident(), signal.SIGINT)
    seen[key] = interrupts.stop_requested()

seen["before"] = interrupts.stop_requested()
interrupts.arm("t", "junction bench --run-id t", grace_s=3600)
interrupts.track(done=0, total=4)  # under way: the first signal waits out the grace period
seen["armed"] = interrupts.stop_requested()
thread = threading.Thread(target=worker, args=("in_the_thread",))
thread.start()
thread.join()
seen["after_the_handler"] = interrupts.stop_requested()
interrupts.disarm()
seen["wakeup_fd_after_disarm"] = signal.set_wakeup_fd(-1)
interrupts.arm("t2", "junction bench --run-id t2", grace_s=3600)
seen["rearmed"] = interrupts.stop_requested()
interrupts.disarm()
print(json.dumps(seen), flush=True)
os._exit(0)
"""


def test_a_unit_thread_sees_the_signal_before_pythons_handler_runs():
    # what this guards: 5 units written after the signal where at most the 4 in
    # flight may finish; a unit had started in the milliseconds before the main thread ran
    # Python's handler. Here the signal reaches a worker thread while the main thread is
    # blocked in join(), so Python's handler cannot have run when the thread asks; before,
    # stop_requested() said False there
    out = subprocess.run([sys.executable, "-c", _SEEN_IN_A_THREAD], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(out.stdout) == {
        "before": False, "armed": False, "in_the_thread": True, "after_the_handler": True,
        "wakeup_fd_after_disarm": -1, "rearmed": False}


_ARMED_AGAIN = """
import json, os, signal
from flows import interrupts
from flows.stopper import RunStopper

def open_fds():
    return len(os.listdir("/proc/self/fd"))

seen = {"before": open_fds()}
for i in range(20):
    stopper = interrupts.arm(f"r{i}", f"junction bench --run-id r{i}", grace_s=3600)
    assert interrupts.armed() is stopper is RunStopper.current()
    with interrupts.unit_write() as allowed:
        assert allowed
    interrupts.disarm()
seen["after"] = open_fds()
seen["armed"] = interrupts.armed() is not None
seen["handler"] = signal.getsignal(signal.SIGINT) is signal.default_int_handler
first = interrupts.arm("a", "junction bench --run-id a")
second = interrupts.arm("b", "junction bench --run-id b")  # the first is disarmed
seen["replaced"] = [first.stop_requested(), interrupts.armed() is second]
interrupts.disarm()
print(json.dumps(seen), flush=True)
"""


def test_each_run_arms_a_stopper_of_its_own_and_disarming_releases_it():
    # the state of a run's stop is its RunStopper's (flows.stopper): arming a new one per
    # run leaves no descriptor open (its wakeup pipe, its copy of the terminal) and the
    # default handler back; arming a second disarms the first
    out = subprocess.run([sys.executable, "-c", _ARMED_AGAIN], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-3000:]
    seen = json.loads(out.stdout)
    assert seen["after"] == seen["before"], seen
    assert seen["armed"] is False and seen["handler"] is True
    assert seen["replaced"] == [False, True]


@pytest.mark.parametrize("argv, expected", [
    (["/x/junction", "bench", "--suite", "a b"], "junction bench --run-id R --suite 'a b'"),
    (["/x/junction", "bench", "--run-id", "R", "--size", "3"],
     "junction bench --run-id R --size 3"),
    (["cli.py", "bench", "--run-id=R", "--full"], "junction bench --run-id R --full"),
    (["/x/junction", "bench"], "junction bench --run-id R"),
], ids=["quoted", "given-id", "equals-form", "no-options"])
def test_resume_command_repeats_the_options(argv, expected):
    assert resume_command(argv, "R", program="junction") == expected


def test_an_unfinished_report_is_undone(tmp_path):
    # what a process ending mid-write_report leaves (flows.stopper.RunStopper.exit_now):
    # its hidden folder, and the earlier report moved aside before the new one was renamed
    from junction.evidence.reports import remove_unfinished_report

    final = tmp_path / "r1"
    hidden = tmp_path / f".r1.tmp-{os.getpid()}"
    aside = tmp_path / f".r1.old-{os.getpid()}"
    other = tmp_path / ".r1.tmp-1"  # another process's: not this one's to remove
    for folder in (hidden, aside, other):
        folder.mkdir()
    (aside / "report.md").write_text("earlier")
    remove_unfinished_report(final)
    assert (final / "report.md").read_text() == "earlier"  # back in place
    assert sorted(p.name for p in tmp_path.iterdir()) == [".r1.tmp-1", "r1"]
    aside.mkdir()  # the new report was renamed in place: the earlier one goes
    remove_unfinished_report(final)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".r1.tmp-1", "r1"]
    remove_unfinished_report(tmp_path / "none")  # nothing to undo


@pytest.mark.parametrize("status, hint", [
    ("running", "wait for it to finish"), ("failed", "its error is in "),
    ("interrupted", "resume it with `junction bench --run-id r1`")])
def test_resolving_an_unfinished_run_states_its_status(tmp_path, status, hint):
    from junction.errors import UnknownNameError
    from junction.evidence.diff import resolve_run

    store = TraceStore(str(tmp_path))
    store.write_run_meta("r1", {"run_id": "r1", "git_commit": "abc", "git_dirty": False,
                                "started_at": "2026-12-04T00:00:00+00:00",
                                "finished_at": None, "status": status, "params_hash": "x",
                                "params": {}})
    with pytest.raises(UnknownNameError, match=f"run r1 is {status}, not completed") as err:
        resolve_run(store, "r1")
    assert hint in str(err.value)
    with pytest.raises(UnknownNameError, match="no run or commit matches 'r2'"):
        resolve_run(store, "r2")
    meta = {**store.read_run_meta("r1"),  # a run the command line started records it
            "resume_command": "junction bench --run-id r1 --suite coupling --size 3"}
    store.write_run_meta("r1", meta)
    with pytest.raises(UnknownNameError) as err:
        resolve_run(store, "r1")
    assert "`junction bench --run-id r1 --suite coupling --size 3`" in str(err.value)
    assert "the same options" not in str(err.value)


@pytest.mark.flow
def test_two_ctrl_c_while_the_report_is_written_leave_the_run_interrupted(cli_env,
                                                                          prefect_harness):
    # before: the run was marked completed first, so a second Ctrl-C in the report left a
    # "completed" run whose report folder held only the plots
    # the signals must land while the report is written; on a loaded machine this process
    # may be scheduled too late and the run finishes first (exit 0): then try again with a
    # new run id, a few times
    reports = Path(cli_env["JUNCTION_REPORTS"])
    for attempt in range(5):
        run_id = f"rep{attempt}"
        args = ["bench", "--suite", "coupling", "--strategy", "exact", "--budget-scale", "1",
                "--run-id", run_id]
        proc = subprocess.Popen([JUNCTION, *args], cwd=ROOT, env=cli_env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
        try:
            deadline = time.monotonic() + 600
            while not list(reports.glob(f".{run_id}.tmp-*")):
                assert proc.poll() is None, proc.stderr.read()[-3000:]
                assert time.monotonic() < deadline, "no report started in 600 s"
                time.sleep(0.002)
            os.kill(proc.pid, signal.SIGINT)
            time.sleep(0.05)
            os.kill(proc.pid, signal.SIGINT)
            _, stderr = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        if proc.returncode != 0:
            break
    assert proc.returncode == 130, stderr[-3000:]
    meta = TraceStore(cli_env["JUNCTION_WAREHOUSE"]).read_run_meta(run_id)
    assert meta["status"] == "interrupted", meta
    folder = reports / run_id
    assert not folder.exists() or \
        {"report.md", "metrics.json", "run.json"} <= {p.name for p in folder.iterdir()}
    # the hidden folder of the cut report is gone on the way out (before: until a resume)
    assert list(reports.glob(f".{run_id}.*")) == [], list(reports.iterdir())
    # resumed: nothing left to evaluate, the report is written whole, then completed
    out = subprocess.run([JUNCTION, *args], cwd=ROOT, env=on_session_server(cli_env),
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert TraceStore(cli_env["JUNCTION_WAREHOUSE"]).read_run_meta(run_id)["status"] == \
        "completed"
    written = {p.name for p in (reports / run_id).iterdir()}
    assert {"report.md", "report.html", "metrics.json", "run.json", "plot.png"} <= written
    assert json.loads((reports / run_id / "run.json").read_text())["status"] == "completed"
    assert list(reports.glob(f".{run_id}.*")) == []


FIT_ARGS = ["--suite", "bfcl-multiple", "--strategy", "learned_exact", "--size", "5",
            "--budget-scale", "1", "--agent-size", "0"]
"""One learned unit: its first seconds are the family model's fit (bfcl-tools' training
part), which writes nothing."""


@pytest.mark.flow
def test_ctrl_c_inside_a_learned_fit_ends_the_run_and_the_resumed_run_is_identical(
        tmp_path, prefect_harness):
    # before: the fit went on until the 5-second fallback (here the unit then finished and
    # was written: "interrupted after 1 of 1 units"); now a learned unit's work is dropped
    # at the signal and the resumed run fits again, to the same rows
    def env_for(name: str) -> dict:
        env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
        env.update(JUNCTION_WAREHOUSE=str(tmp_path / name / "wh"),
                   JUNCTION_REPORTS=str(tmp_path / name / "rep"),
                   JUNCTION_STATE_DIR=str(tmp_path / name / "state"), COLUMNS="200")
        return env

    cut = env_for("cut")
    warehouse = Path(cut["JUNCTION_WAREHOUSE"])
    proc = subprocess.Popen([JUNCTION, "bench", *FIT_ARGS, "--run-id", "fit"], cwd=ROOT,
                            env=cut, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 600
        while not (warehouse / "runs" / "fit.json").exists():  # its unit starts at once
            assert proc.poll() is None, proc.stderr.read()[-3000:]
            assert time.monotonic() < deadline, "the run did not start in 600 s"
            time.sleep(0.002)
        time.sleep(0.5)  # into the fit (several seconds here), not merely before the unit
        assert proc.poll() is None, proc.stderr.read()[-3000:]
        os.kill(proc.pid, signal.SIGINT)
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, stderr[-3000:]
    lines = stderr.splitlines()
    command = shlex.join(["junction", "bench", "--run-id", "fit", *FIT_ARGS])
    assert len(lines) == 1 and re.fullmatch(
        r"interrupted after 0 of 1 units; resume with `(.*)`", lines[0]), stderr
    assert lines[0].endswith(f"{command}`"), lines  # after the program as it was started
    meta = TraceStore(str(warehouse)).read_run_meta("fit")
    assert meta["status"] == "interrupted" and meta["units_done"] == 0, meta
    assert not list(warehouse.rglob("*.parquet"))  # the fit's unit wrote nothing
    log = (Path(cut["JUNCTION_STATE_DIR"]) / "logs" / "fit.log").read_text()
    assert "interrupt: the run ends at once: a learned unit's work (its fit) is dropped" \
        in log, log[-3000:]  # not after the 5-second fallback
    assert [p for p in warehouse.rglob("*") if ".tmp" in p.name] == []

    resumed = subprocess.run([JUNCTION, *shlex.split(command)[1:]], cwd=ROOT,
                             env=on_session_server(cut), capture_output=True, text=True,
                             timeout=900)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "resuming run fit" in resumed.stdout and "in 1 units (0 already done)" in \
        resumed.stdout
    whole = env_for("whole")
    once = subprocess.run([JUNCTION, "bench", *FIT_ARGS, "--run-id", "fit"], cwd=ROOT,
                          env=on_session_server(whole), capture_output=True, text=True,
                          timeout=900)
    assert once.returncode == 0, once.stderr[-3000:]
    scans = [f"read_parquet('{Path(e['JUNCTION_WAREHOUSE']) / 'traces'}/**/*.parquet')"
             for e in (cut, whole)]
    for a, b in (scans, scans[::-1]):  # row for row, both ways
        assert duckdb.sql(f"select count(*) from (select * from {a} except all "
                          f"select * from {b})").fetchall() == [(0,)]
    assert duckdb.sql(f"select count(*) from {scans[0]}").fetchall() == [(5,)]
    assert (Path(cut["JUNCTION_REPORTS"]) / "fit" / "metrics.json").read_bytes() == \
        (Path(whole["JUNCTION_REPORTS"]) / "fit" / "metrics.json").read_bytes()
