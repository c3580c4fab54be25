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

from junction.environment import state_dir

__all__ = ["configure_prefect_env"]

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
