"""Where Junction keeps its files: the project folder and the git-ignored state folder.

In a checkout (an editable install) the project folder is the checkout; installed as a
package (``pip install .``) it is the working folder at import time, so ``warehouse/``,
``reports/`` and ``.state/`` land where the user runs ``junction``.

A folder the user names (``$JUNCTION_STATE_DIR``, a traces or reports root) that is a file,
or lies inside one, is refused in one line naming where the name came from
(``check_folder``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from junction.errors import JunctionError

__all__ = ["PROJECT_ROOT", "check_folder", "state_dir", "usable_cpus"]


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
    ``JunctionError`` naming the variable when it names a file or a path inside one
    (``check_folder``).
    """
    env = os.environ.get("JUNCTION_STATE_DIR")
    if not env:
        return PROJECT_ROOT / ".state"
    return check_folder(Path(env), f"JUNCTION_STATE_DIR={env}",
                        "set JUNCTION_STATE_DIR to a folder")


def check_folder(path: Path, label: str, fix: str, writable: bool = False) -> Path:
    """``path`` if it is a folder or can be made one; else ``JunctionError`` in one line:
    ``"<label> is a file, not a folder; <fix>"`` when ``path`` or a folder above it is a
    file (``label``: where the path came from, e.g. ``--reports /tmp/r`` or
    ``JUNCTION_STATE_DIR=/tmp/s``; ``fix``: what to do). With ``writable``, also
    ``"<label> is not a writable folder: <reason>"`` when the folder cannot be made or a
    file cannot be written in it: checked by making the folder and a temporary file, and
    then removing what the check made. Local paths only."""
    in_the_way = next((p for p in (path, *path.parents) if _exists(p)), None)
    if in_the_way is not None and not in_the_way.is_dir():
        what = "a file" if in_the_way == path else f"inside {in_the_way}, a file"
        raise JunctionError(f"{label} is {what}, not a folder; {fix}")
    if not writable:
        return path
    created = next((p for p in (*reversed(path.parents), path) if not p.exists()), None)
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as exc:
        raise JunctionError(f"{label} is not a writable folder: {exc.strerror or exc}") \
            from None
    finally:  # a check writes nothing: remove the folders it made
        if created is not None and created.is_dir():
            shutil.rmtree(created, ignore_errors=True)
    return path


def _exists(path: Path) -> bool:
    """Whether ``path`` exists (False where it cannot be looked at: no permission)."""
    try:
        return path.exists()
    except OSError:
        return False


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the OS has one, else the
    machine's count), at least 1."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)
