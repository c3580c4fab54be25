"""One writer per run: the run id's OS file lock, and the names safe in a path.

Kept apart from ``store`` (which imports pyarrow and the trace schema) and light to
import, so the command line refuses a second writer of a run id before it loads anything
else: ``check_run_free`` reads the lock of a run id without taking or making anything,
``run_lock`` holds it for the run's duration.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from junction.errors import JunctionError, TraceError

__all__ = ["RunLockedError", "check_name", "check_run_free", "lock_path", "run_lock"]

_SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")


class RunLockedError(JunctionError):
    """Another process holds the run id's lock; the message names its PID and start time."""


def check_name(value: str, field: str) -> str:
    """Refuse a path component that is empty or holds characters unsafe in a folder name."""
    if not _SAFE.match(value or ""):
        raise TraceError(
            f"{field} {value!r} must start with a letter or digit and use only "
            "letters, digits, '.', '_', '+' and '-'"
        )
    return value


def lock_path(root: Path, run_id: str) -> Path:
    """``root/runs/.<run_id>.lock`` (``run_id`` checked by ``check_name``)."""
    return Path(root) / "runs" / f".{check_name(run_id, 'run_id')}.lock"


def _refusal(run_id: str, handle) -> RunLockedError:
    handle.seek(0)
    holder = handle.read().strip() or "an unknown process"
    return RunLockedError(f"run {run_id} is being written by {holder}; wait for it to "
                          "finish or use another --run-id")


def check_run_free(root: Path, run_id: str) -> None:
    """``RunLockedError`` if another process holds ``run_id``'s lock under the local
    folder ``root``; creates nothing (no lock file, no folder: nothing to check)."""
    path = lock_path(root, run_id)
    try:
        handle = open(path, encoding="utf-8")  # noqa: SIM115 (the with below closes it)
    except OSError:
        return  # no lock file (or no folder): nobody holds it
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            raise _refusal(run_id, handle) from None
        fcntl.flock(handle, fcntl.LOCK_UN)


@contextlib.contextmanager
def run_lock(root: Path, run_id: str) -> Iterator[None]:
    """Hold ``root/runs/.<run_id>.lock`` (an OS file lock) while a process writes the run.

    A second holder fails at once with ``RunLockedError`` naming the holder's PID and
    start time. The OS drops the lock when its process dies, so a crash never leaves a
    stale lock.
    """
    path = lock_path(root, run_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise _refusal(run_id, handle) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"PID {os.getpid()} (started {datetime.now(UTC).isoformat()})")
        handle.flush()
        try:
            yield
        finally:
            handle.seek(0)
            handle.truncate()
            fcntl.flock(handle, fcntl.LOCK_UN)
