"""Faults a new user meets, each on a real process: a server that accepts and never
answers, an HTTP 400 that must carry the server's reason (tests/test_remote_agent.py, on
the real llama-cpp-python server), and the checks that come before Prefect starts."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import on_session_server

ROOT = Path(__file__).resolve().parent.parent
JUNCTION = str(Path(sys.executable).parent / "junction")

SILENT_SERVER = """
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0)); s.listen(64)
print(s.getsockname()[1], flush=True)
held = []
while True:
    conn, _ = s.accept()
    held.append(conn)  # accepted, read by nobody, never answered
"""


@pytest.fixture
def silent_server():
    """A real process listening on loopback that accepts every connection and never
    answers; yields its base URL."""
    proc = subprocess.Popen([sys.executable, "-c", SILENT_SERVER], stdout=subprocess.PIPE,
                            text=True)
    try:
        port = int(proc.stdout.readline())
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture
def user_env(tmp_path):
    """A user's shell, no server configured; Prefect's home is the session's (the
    temporary servers of one home each use a database of their own)."""
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(JUNCTION_WAREHOUSE=str(tmp_path / "wh"), JUNCTION_REPORTS=str(tmp_path / "rep"),
               JUNCTION_STATE_DIR=str(tmp_path / "state"), COLUMNS="200")
    return env


@pytest.mark.flow
def test_a_server_that_never_answers_is_one_line_in_seconds(silent_server, user_env):
    # before: the checks before the run used the 600 s generation timeout and 2 retries,
    # about 30 minutes with nothing printed. The checks' own limit (10 s by default, one
    # retry: 20 s of waiting) is given as 2 s here, beside a generation timeout of 900 s
    out = subprocess.run([JUNCTION, "bench", "--suite", "coupling", "--strategy", "exact",
                          "--budget-scale", "1", "--agent-url", silent_server,
                          "--agent-model", "any", "--agent-timeout", "900",
                          "--agent-check-timeout", "2"],
                         cwd=ROOT, env=user_env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 1, out.stderr[-3000:]
    assert len(out.stderr.splitlines()) == 1, out.stderr[-3000:]
    assert out.stderr.startswith(f"error: agent server {silent_server}: listing models "
                                 "failed: no answer within 2 s"), out.stderr
    assert "retries connection errors, 429 and 5xx 1 time); a server slower to answer " \
        "needs --agent-check-timeout S" in out.stderr
    assert not (Path(user_env["JUNCTION_WAREHOUSE"]) / "traces").exists()


@pytest.mark.parametrize("name", ["agent_timeout", "agent_check_timeout"])
@pytest.mark.parametrize("value, shown", [("0", "greater than 0 (got 0.0)"),
                                          ("nan", "a finite number (got nan)"),
                                          ("-1", "greater than 0 (got -1.0)")])
def test_a_bad_agent_timeout_is_refused(name, value, shown):
    from flows.plan import RunPlan
    from junction.errors import JunctionError

    with pytest.raises(JunctionError, match=rf"^{name} \(--{name.replace('_', '-')}\): "
                                            rf"Input should be {re.escape(shown)}$"):
        RunPlan.build(suites=["coupling"], agent_url="http://127.0.0.1:9/v1",
                      agent_model="m", **{name: float(value)})
    with pytest.raises(JunctionError, match=f"{name} applies to a remote agent only"):
        RunPlan.build(suites=["coupling"], **{name: 5.0})


def _as_from_a_terminal() -> None:
    """In the child before exec: SIGINT as a terminal's shell leaves it (default action,
    not blocked). A test process may have it ignored or blocked by something that ran in
    it earlier, and a child inherits both; Python then never raises KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _parent_sigint() -> str:
    """This process's SIGINT disposition and mask, for a failure message."""
    return (f"(test process: SIGINT handler {signal.getsignal(signal.SIGINT)!r}, blocked "
            f"{signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, [])})")


def _bench(env, *extra):
    return subprocess.Popen([JUNCTION, "bench", "--suite", "coupling", "--strategy", "exact",
                             "--budget-scale", "1", *extra], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=_as_from_a_terminal)


def _stop(proc) -> str:
    os.kill(proc.pid, signal.SIGINT)
    try:
        return proc.communicate(timeout=120)[1]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _cmdline(child) -> str:
    """A child's command line, or "" once it has exited (a zombie or gone: a short-lived
    child of the run, such as ``git``, can end between the listing and this read)."""
    import psutil

    try:
        return " ".join(child.cmdline())
    except psutil.Error:
        return ""


def _alive(child) -> bool:
    """Whether a child still runs (neither gone nor a zombie)."""
    import psutil

    try:
        return child.is_running() and child.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


@pytest.mark.flow
def test_ctrl_c_while_the_server_starts_is_one_line_and_leaves_nothing_running(user_env):
    # before: the line went to the run's log (fd 2 was the log while the server started)
    # and the half-started server outlived the command
    import psutil

    proc = _bench(user_env)
    children: list = []
    while not any("uvicorn" in _cmdline(c) for c in children):
        assert proc.poll() is None, proc.stderr.read()[-3000:]
        try:
            children = psutil.Process(proc.pid).children(recursive=True)
        except psutil.Error:
            children = []
    stderr = _stop(proc)
    assert proc.returncode == 130, stderr[-3000:]
    lines = stderr.splitlines()
    # the server may finish starting within the grace period (a start from the home's
    # template takes a few seconds), and then the run has planned its units: "after 0 of 1"
    assert len(lines) == 1 and lines[0].startswith(("interrupted before any unit started; ",
                                                    "interrupted after 0 of 1 units; ")), stderr
    assert "resume with `" in lines[0] and "junction bench --run-id " in lines[0], stderr
    assert not [c.pid for c in children if _alive(c)]


@pytest.mark.flow
def test_ctrl_c_before_the_run_starts_is_one_line(user_env):
    # before: typer ended it with a silent exit 130. The signal goes as soon as the state
    # folder appears; a run of 72 units outlasts a signal that a loaded machine delivers
    # late (a one-unit run could finish first, exit 0), so the line says "before" or, when
    # the run had started, "after N of 72 units": one line and 130 either way
    proc = subprocess.Popen([JUNCTION, "bench", "--suite", "synthetic", "--strategy", "exact",
                             "--strategy", "fixed_split", "--batch-size", "5"], cwd=ROOT,
                            env=user_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, start_new_session=True, preexec_fn=_as_from_a_terminal)
    while not (Path(user_env["JUNCTION_STATE_DIR"]).exists() or proc.poll() is not None):
        pass  # the process is up and has begun reading its plan
    stderr = _stop(proc)
    assert proc.returncode == 130, stderr[-3000:] + _parent_sigint()
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(("interrupted before ",
                                                    "interrupted after ")), stderr


@pytest.mark.flow
def test_ctrl_c_to_a_dask_run_is_one_line_and_leaves_nothing_running(user_env):
    # the terminal's Ctrl-C reaches the whole process group; before: 162 lines of worker
    # tracebacks and EventsWorker errors
    import psutil

    proc = subprocess.Popen([JUNCTION, "bench", "--suite", "synthetic", "--strategy", "exact",
                             "--strategy", "fixed_split", "--batch-size", "5", "--runner",
                             "dask", "--workers", "2"], cwd=ROOT, env=user_env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    traces = Path(user_env["JUNCTION_WAREHOUSE"]) / "traces"
    try:
        while len(list(traces.rglob("*.parquet"))) < 2:
            assert proc.poll() is None, proc.stderr.read()[-3000:]
            time.sleep(0.05)
        started = psutil.Process(proc.pid).children(recursive=True)
        os.killpg(proc.pid, signal.SIGINT)
        stderr = proc.communicate(timeout=120)[1]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, stderr[-3000:]
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("interrupted after "), stderr[-3000:]
    assert len(started) >= 2  # the workers (and the server) were there
    assert not [c.pid for c in started if _alive(c)]


FIXTURE = ROOT / "tests" / "data" / "tau2_fixture"


def _trailing_comma(path: Path) -> int:
    """Write a trailing comma after the last member of the JSON object in ``path`` (a
    user's hand edit); returns the line it is on (1-based)."""
    text = path.read_text(encoding="utf-8").rstrip()
    assert text.endswith("}")
    body = text[:-1].rstrip() + ","
    path.write_text(body + "\n}\n", encoding="utf-8")
    return body.count("\n") + 1


def _default_run(env, run_id: str) -> subprocess.CompletedProcess:
    """The default plan, one task per suite at scale 1, ``exact`` only, no agent, on the
    session's Prefect server (the caller holds ``prefect_harness``): what τ's data does to
    the run and its report does not depend on where Prefect runs; a temporary server's
    start is what the Ctrl-C tests above and tests/test_hardening.py are about."""
    return subprocess.run([JUNCTION, "bench", "--size", "1", "--budget-scale", "1",
                           "--agent-size", "0", "--strategy", "exact", "--run-id", run_id],
                          cwd=ROOT, env=on_session_server(env), capture_output=True,
                          text=True, timeout=900)


def _first_screen(env, run_id: str) -> str:
    """report.md above its ``## Run`` section: the headline and what stands under it."""
    report = (Path(env["JUNCTION_REPORTS"]) / run_id / "report.md").read_text()
    return report.split("## Run", 1)[0]


@pytest.mark.flow
def test_a_tau2_folder_that_fails_to_load_is_one_warning_line_at_start(user_env, tmp_path,
                                                                       prefect_harness):
    # before: the default run left τ out without a word (exit 0, nothing on stderr), its
    # reason only in run.json and one report line
    folder = tmp_path / "tau2"
    shutil.copytree(FIXTURE, folder)
    bad = folder / "tasks" / "task_003.json"
    line = _trailing_comma(bad)
    env = {**user_env, "JUNCTION_TAU2_DATA": str(folder)}
    out = _default_run(env, "quiet")
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stderr.splitlines()
    assert len(lines) == 1, out.stderr[-3000:]
    assert lines[0].startswith(f"warning: tau2-banking is left out of this run: {bad}: not "
                               "readable JSON ("), lines
    assert f": line {line + 1} column 1 " in lines[0], lines  # json names the next line
    # the state: the run completed without τ, and its record says why
    meta = json.loads((Path(user_env["JUNCTION_WAREHOUSE"]) / "runs" / "quiet.json")
                      .read_text())
    assert meta["status"] == "completed"
    assert "tau2-banking" not in meta["params"]["suites"]
    assert meta["suites_skipped"]["tau2-banking"] == lines[0].split("this run: ", 1)[1]
    traces = Path(user_env["JUNCTION_WAREHOUSE"]) / "traces" / "run_id=quiet"
    assert traces.is_dir() and not list(traces.glob("suite=tau2-banking"))
    # and the report's first screen says where the finding is and what went wrong
    assert f"is on suite `tau2-banking`, which this run left out: {bad}: not readable " \
        "JSON (" in _first_screen(env, "quiet")


@pytest.mark.flow
def test_without_tau2_data_the_first_screen_says_where_the_finding_is(user_env,
                                                                       prefect_harness):
    # before: nothing above the fold; the skip line stood above the Suites section only
    env = {k: v for k, v in user_env.items() if k != "JUNCTION_TAU2_DATA"}
    out = _default_run(env, "bare")
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stderr == ""  # absent data is the default state, not a fault
    screen = _first_screen(env, "bare")
    sentences = [s for s in screen.splitlines() if "study's finding" in s]
    assert len(sentences) == 1, screen
    assert "is on suite `tau2-banking`, which this run left out: no data (set " \
        "JUNCTION_TAU2_DATA or pass --data tau2-banking=PATH, PATH a clone of " \
        "https://github.com/sierra-research/tau2-bench)." in sentences[0]
    assert screen.index("## Headline") < screen.index(sentences[0])
    meta = json.loads((Path(env["JUNCTION_WAREHOUSE"]) / "runs" / "bare.json").read_text())
    assert meta["status"] == "completed" and "tau2-banking" in meta["suites_skipped"]


@pytest.mark.flow
def test_a_fold_count_the_suite_cannot_fill_is_one_line_before_the_run(user_env, tmp_path):
    # before: found in the flow, after the server had started, as a unit error; the
    # fixture builds 5 of its 6 tasks (one has no instructions)
    env = {**user_env, "PREFECT_HOME": str(tmp_path / "prefect")}
    out = subprocess.run([JUNCTION, "bench", "--suite", "tau2-banking", "--strategy",
                          "learned_exact", "--folds", "6", "--tau2-data", str(FIXTURE)],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 1, out.stderr[-3000:]
    assert out.stderr.splitlines() == [
        "error: folds: 6 folds cannot be filled: suite tau2-banking has 5 tasks to deal "
        "into folds; give --folds 5 or fewer"], out.stderr
    assert not list((tmp_path / "prefect").rglob("*.db"))  # no server was started
    assert not Path(user_env["JUNCTION_WAREHOUSE"]).exists()
    assert not Path(user_env["JUNCTION_REPORTS"]).exists()
