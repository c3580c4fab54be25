"""Faults a new user meets, each on a real process: a server that accepts and never
answers, an HTTP 400 that must carry the server's reason (tests/test_remote_agent.py, on
the real llama-cpp-python server), and the checks that come before Prefect starts."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
JUNCTION = shutil.which("junction", path=str(Path(sys.executable).parent))

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
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(JUNCTION_WAREHOUSE=str(tmp_path / "wh"), JUNCTION_REPORTS=str(tmp_path / "rep"),
               JUNCTION_STATE_DIR=str(tmp_path / "state"),
               PREFECT_HOME=str(tmp_path / "prefect"), COLUMNS="200")
    return env


@pytest.mark.flow
def test_a_server_that_never_answers_is_one_line_in_seconds(silent_server, user_env):
    # before: the checks before the run used the 600 s generation timeout and 2 retries,
    # about 30 minutes with nothing printed
    out = subprocess.run([JUNCTION, "bench", "--suite", "coupling", "--strategy", "exact",
                          "--budget-scale", "1", "--agent-url", silent_server,
                          "--agent-model", "any", "--agent-timeout", "900"],
                         cwd=ROOT, env=user_env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 1, out.stderr[-3000:]
    assert len(out.stderr.splitlines()) == 1, out.stderr[-3000:]
    assert out.stderr.startswith(f"error: agent server {silent_server}: listing models "
                                 "failed: no answer within 10 s"), out.stderr
    assert "retries connection errors, 429 and 5xx 1 time)" in out.stderr
    assert not (Path(user_env["JUNCTION_WAREHOUSE"]) / "traces").exists()


@pytest.mark.parametrize("value, message", [
    ("0", "agent_timeout must be a number of seconds > 0, got 0.0"),
    ("nan", "agent_timeout must be a number of seconds > 0, got nan"),
])
def test_a_bad_agent_timeout_is_refused(value, message):
    from flows.plan import RunPlan
    from junction.errors import JunctionError

    with pytest.raises(JunctionError, match=message):
        RunPlan.build(suites=["coupling"], agent_url="http://127.0.0.1:9/v1",
                      agent_model="m", agent_timeout=float(value))
    with pytest.raises(JunctionError, match="agent_timeout applies to a remote agent only"):
        RunPlan.build(suites=["coupling"], agent_timeout=5.0)
