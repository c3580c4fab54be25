"""Process environment for the orchestration layer: Prefect's home, analytics, timeouts.

Prefect runs a temporary local server per process when no server is configured. Offline
and on a fresh home it needs: its home in a writable project folder (``.state/prefect``),
analytics and telemetry off (no network), and a start-up timeout of 60 s or more (we use
120 s; Prefect's default of 20 s is too short on a cold 2-core machine). Values already set
in the environment win. Call ``configure_prefect_env()`` before importing prefect. The
temporary server itself is started and stopped by ``flows.server``.
"""

from __future__ import annotations

import os
from pathlib import Path

from junction.environment import check_folder, state_dir
from junction.errors import JunctionError

__all__ = ["configure_prefect_env"]

_DEFAULTS = {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_CLOUD_ENABLE_ORCHESTRATION_TELEMETRY": "false",
    "PREFECT_TELEMETRY_ENABLE_RESOURCE_METRICS": "false",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
    "DO_NOT_TRACK": "1",
}


def configure_prefect_env(logging_level: str | None = None) -> None:
    """Set Prefect's offline defaults (see module docstring) unless already set, and make
    Prefect's home. ``JunctionError`` in one line naming the variable
    (``JUNCTION_STATE_DIR``, or ``PREFECT_HOME`` where it is set) when that home is, or lies
    inside, a file or cannot be made (``junction.environment.check_folder``); the other
    defaults are set first, so a caller may report the error later (``flows.cli.main``)."""
    for key, value in _DEFAULTS.items():
        os.environ.setdefault(key, value)
    if logging_level:
        os.environ.setdefault("PREFECT_LOGGING_LEVEL", logging_level)
    given = os.environ.get("PREFECT_HOME")
    if given:
        home = check_folder(Path(given), f"PREFECT_HOME={given}", "set PREFECT_HOME to a folder")
    else:
        home = state_dir() / "prefect"  # JUNCTION_STATE_DIR naming a file: one line
        os.environ["PREFECT_HOME"] = str(home)
    try:
        home.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        variable = "PREFECT_HOME" if given else "JUNCTION_STATE_DIR"
        raise JunctionError(f"cannot make Prefect's home {home}: {exc.strerror or exc}; set "
                            f"{variable} to a writable folder") from None
