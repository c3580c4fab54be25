"""Where Junction keeps its files: the project folder and the git-ignored state folder.

In a checkout (an editable install) the project folder is the checkout; installed as a
package (``pip install .``) it is the working folder at import time, so ``warehouse/``,
``reports/`` and ``.state/`` land where the user runs ``junction``.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["PROJECT_ROOT", "state_dir", "usable_cpus"]


def _project_root() -> Path:
    checkout = Path(__file__).resolve().parent.parent
    if (checkout / "pyproject.toml").is_file() and (checkout / "junction").is_dir():
        return checkout
    return Path.cwd()


PROJECT_ROOT = _project_root()
"""The checkout holding this package, else the working folder at import time."""


def state_dir() -> Path:
    """The git-ignored state folder: ``$JUNCTION_STATE_DIR`` or ``<project>/.state``.

    Read at call time, so a process (or a test) that sets the variable later is honoured.
    """
    env = os.environ.get("JUNCTION_STATE_DIR")
    return Path(env) if env else PROJECT_ROOT / ".state"


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the OS has one, else the
    machine's count), at least 1."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)
