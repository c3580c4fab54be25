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
    """Start this process's temporary Prefect server on a database of its own.

    Without a configured server (``PREFECT_API_URL`` unset) each process starts its own
    temporary server. On one shared SQLite file in ``PREFECT_HOME`` two of them race at
    the first migration (``index ... already exists``) and contend for the file's lock
    while both run (a ``database is locked`` traceback in a full test session). So, unless
    ``PREFECT_API_DATABASE_CONNECTION_URL`` is set in the environment, the server gets its
    own SQLite file, ``PREFECT_HOME/ephemeral/<pid>.db`` (files of processes that have
    ended are removed at the next start; Junction keeps its own run records, so nothing of
    Prefect's per-run database needs to outlive the process). The start itself holds an OS
    file lock in ``PREFECT_HOME``, so a user-configured shared database is still migrated
    by one process at a time. Prefect's ``SubprocessASGIServer`` is a per-process
    singleton, which the client then reuses. Does nothing when a server is configured.
    """
    import fcntl

    from prefect.settings import (
        PREFECT_API_DATABASE_CONNECTION_URL,
        PREFECT_API_URL,
        PREFECT_SERVER_EPHEMERAL_ENABLED,
        temporary_settings,
    )

    if PREFECT_API_URL.value() or not PREFECT_SERVER_EPHEMERAL_ENABLED.value():
        return
    from prefect.server.api.server import SubprocessASGIServer

    home = Path(os.environ.get("PREFECT_HOME", str(state_dir() / "prefect")))
    home.mkdir(parents=True, exist_ok=True)
    updates = {}
    if "PREFECT_API_DATABASE_CONNECTION_URL" not in os.environ:
        updates[PREFECT_API_DATABASE_CONNECTION_URL] = (
            f"sqlite+aiosqlite:///{_process_database(home / 'ephemeral')}")
    with open(home / ".junction-server-start.lock", "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # released when the file closes
        with temporary_settings(updates=updates):
            SubprocessASGIServer().start()


def _process_database(folder: Path) -> Path:
    """``folder/<pid>.db`` for this process, after removing the files (and SQLite's
    ``-wal``/``-shm``/``-journal`` companions) of processes that no longer run."""
    folder.mkdir(parents=True, exist_ok=True)
    for path in folder.iterdir():
        pid = path.name.split(".", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            path.unlink(missing_ok=True)
    return folder / f"{os.getpid()}.db"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
