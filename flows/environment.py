"""Process environment for the orchestration layer: Prefect's home, analytics, timeouts.

Prefect runs a temporary local server per process when no server is configured. Offline
and on a fresh home it needs: its home in a writable project folder (``.state/prefect``),
analytics and telemetry off (no network), and a start-up timeout of 60 s or more (we use
120 s; Prefect's default of 20 s is too short on a cold 2-core machine). Values already set
in the environment win. Call ``configure_prefect_env()`` before importing prefect.
"""

from __future__ import annotations

import os
from pathlib import Path

from junction.environment import state_dir

__all__ = ["configure_prefect_env", "start_temporary_server"]

_DEFAULTS = {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_CLOUD_ENABLE_ORCHESTRATION_TELEMETRY": "false",
    "PREFECT_TELEMETRY_ENABLE_RESOURCE_METRICS": "false",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
    "DO_NOT_TRACK": "1",
}


def configure_prefect_env(logging_level: str | None = None) -> None:
    """Set Prefect's offline defaults (see module docstring) unless already set."""
    os.environ.setdefault("PREFECT_HOME", str(state_dir() / "prefect"))
    for key, value in _DEFAULTS.items():
        os.environ.setdefault(key, value)
    if logging_level:
        os.environ.setdefault("PREFECT_LOGGING_LEVEL", logging_level)
    Path(os.environ["PREFECT_HOME"]).mkdir(parents=True, exist_ok=True)


def start_temporary_server() -> None:
    """Start this process's temporary Prefect server with the first migration serialised.

    Without a configured server (``PREFECT_API_URL`` unset) each process starts its own
    temporary server on the shared database in ``PREFECT_HOME``; two processes starting at
    once on a fresh home race to create its tables (``index ... already exists``). This
    starts the server (Prefect's own ``SubprocessASGIServer``, which the client then reuses)
    while holding an OS file lock in ``PREFECT_HOME``, so one process migrates and the other
    finds the tables made. Does nothing when a server is configured.
    """
    import fcntl

    from prefect.settings import PREFECT_API_URL, PREFECT_SERVER_EPHEMERAL_ENABLED

    if PREFECT_API_URL.value() or not PREFECT_SERVER_EPHEMERAL_ENABLED.value():
        return
    from prefect.server.api.server import SubprocessASGIServer

    home = Path(os.environ.get("PREFECT_HOME", str(state_dir() / "prefect")))
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".junction-server-start.lock", "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # released when the file closes
        SubprocessASGIServer().start()
