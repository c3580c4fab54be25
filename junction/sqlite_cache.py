"""One way to open the project's persistent caches: a stdlib ``sqlite3`` file in WAL mode.

WAL mode lets readers run while one writer writes; two processes may share a file, each
waiting up to ``busy_timeout_s`` for a write lock. Used by the judge's score cache
(``junction.judge.cache``), the agent's generation cache (``junction.agent.generations``) and
the dense vector cache (``junction.dense``).

A cache is derived data: losing one costs time, never a run. ``check_cache`` (run by
``open_wal`` once per process and file, and by ``check_caches`` for every file of
``CACHE_FILES`` before a run starts) runs sqlite's ``PRAGMA quick_check``; a file that
fails it, or is not a database at all, is moved aside to ``<name>.corrupt-<UTC time>``
(its ``-wal`` and ``-shm`` companions beside it) with one warning naming both paths, and
a fresh cache is made in its place. A cache whose folder cannot be written is a
``CacheError`` of one line.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
import threading
import warnings
from datetime import UTC, datetime
from pathlib import Path

from junction.errors import JunctionError

__all__ = ["CACHE_FILES", "CacheError", "check_cache", "check_caches", "open_wal"]

CACHE_FILES: dict[str, str] = {
    "judge_scores.sqlite": "judge score cache",
    "agent_cache.sqlite": "agent cache",
    "dense_vectors.sqlite": "dense vector cache",
}
"""Every persistent cache under the state folder: file name -> what it is (the name the
warnings and errors use). ``junction.judge.session.SCORE_CACHE_NAME`` and
``junction.agent.generations.AGENT_CACHE_NAME`` and ``junction.dense.DENSE_CACHE_NAME`` name
three of them; a new cache adds its file here."""

_COMPANIONS = ("-wal", "-shm", "-journal")
_PROBE_BYTES = 64 * 1024
"""Bytes written (and synced) into a cache's folder to show it can be written: enough to
need real disk blocks, so a full disk fails here, not in the middle of a unit."""

_CHECKED: set[Path] = set()
_CHECK_LOCK = threading.Lock()


class CacheError(JunctionError):
    """A cache file or its folder cannot be read or written (the message names the path)."""


def _corruption(path: Path) -> str | None:
    """Why the sqlite file at ``path`` is unusable (sqlite's own words), or None if sound."""
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30.0)  # no checkpoint
    except sqlite3.OperationalError as exc:
        raise CacheError(f"cannot open {path}: {exc}") from None
    try:
        rows = [r[0] for r in db.execute("PRAGMA quick_check").fetchall()]
    except sqlite3.DatabaseError as exc:
        if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
            raise CacheError(f"cannot check {path}: {exc}") from None
        return str(exc)
    finally:
        db.close()
    if rows == ["ok"]:
        return None
    lines = [line for row in rows for line in str(row).splitlines()
             if line and not line.startswith("***")]
    return lines[-1] if lines else "quick_check failed"


def _aside_name(path: Path) -> Path:
    """``<name>.corrupt-<UTC time>``, with ``-2``, ``-3``... if that name is taken."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    aside, n = path.with_name(f"{path.name}.corrupt-{stamp}"), 1
    while any(Path(f"{aside}{c}").exists() for c in ("", *_COMPANIONS)):
        n += 1
        aside = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
    return aside


def _check_folder_writable(folder: Path, what: str, path: Path) -> None:
    if folder.exists() and not folder.is_dir():
        raise CacheError(f"the {what} {path} cannot be written: {folder} is not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder, prefix=".junction-probe-") as probe:
            probe.write(b"\0" * _PROBE_BYTES)
            probe.flush()
            os.fsync(probe.fileno())
    except OSError as exc:
        raise CacheError(f"the {what} {path} cannot be written: "
                         f"{exc.strerror or exc} ({exc.filename or folder})") from None


def check_cache(path: Path, what: str = "cache") -> Path | None:
    """Check the sqlite cache at ``path`` before use; return where a corrupt one went.

    - its folder is created if missing and must take a 64 KiB write (``CacheError``, one
      line naming the file and the reason: permissions, a full disk, a file in the way);
    - an existing file must be writable and pass ``PRAGMA quick_check`` (sqlite's check of
      every page and b-tree, without the index cross-check of ``integrity_check``); one that
      fails, or is not a database, is renamed with its ``-wal``/``-shm``/``-journal`` files
      to ``<name>.corrupt-<UTC time>`` and a ``UserWarning`` names both paths; that new
      path is returned (None when nothing was moved). The next open creates a fresh file.

    ``what`` names the cache in messages. A file another process holds a write lock on is
    waited for (30 s), then a ``CacheError``.
    """
    path = Path(path)
    _check_folder_writable(path.parent, what, path)
    if not path.exists():
        return None
    if not path.is_file():
        raise CacheError(f"the {what} {path} is not a file; remove it or set "
                         "JUNCTION_STATE_DIR to another folder")
    if not os.access(path, os.R_OK | os.W_OK):
        raise CacheError(f"the {what} {path} cannot be written: permission denied")
    reason = _corruption(path)
    if reason is None:
        return None
    aside = _aside_name(path)
    try:
        for companion in _COMPANIONS:
            if Path(f"{path}{companion}").exists():
                os.replace(f"{path}{companion}", f"{aside}{companion}")
        os.replace(path, aside)
    except OSError as exc:
        raise CacheError(f"the {what} {path} is corrupt ({reason}) and cannot be moved "
                         f"aside: {exc.strerror or exc}; remove it") from None
    warnings.warn(f"the {what} {path} was corrupt ({reason}); moved it to {aside} and "
                  "started a fresh one", stacklevel=2)
    return aside


def _check_once(path: Path, what: str) -> Path | None:
    """``check_cache`` at most once per process and resolved path (every open calls it)."""
    key = Path(path).resolve()
    with _CHECK_LOCK:
        if key in _CHECKED:
            return None
        aside = check_cache(path, what)
        _CHECKED.add(key)
    return aside


def check_caches(folder: Path) -> list[Path]:
    """``check_cache`` on every file of ``CACHE_FILES`` under ``folder`` (the state folder),
    once per process each; returns where corrupt ones were moved. Call it before any work
    starts, so a bad cache is one warning or one ``CacheError`` at the start, not a failure
    inside a unit."""
    moved = [_check_once(Path(folder) / name, what) for name, what in CACHE_FILES.items()]
    return [p for p in moved if p is not None]


def open_wal(path: Path, create_sql: str, error: type[Exception], what: str,
             busy_timeout_s: float = 30.0) -> sqlite3.Connection:
    """Open (creating the folder and the table) the cache at ``path``; autocommit mode.

    Checks the file first (``check_cache``, once per process: a corrupt one is moved aside
    with a warning and a fresh one made). Raises ``error`` with a message naming ``what``
    and the file when the check or sqlite refuses.
    """
    try:
        _check_once(path, what)
    except CacheError as exc:
        raise error(str(exc)) from None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(path, timeout=busy_timeout_s, check_same_thread=False,
                             isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute(create_sql)
    except (OSError, sqlite3.Error) as exc:
        raise error(f"cannot open the {what} {path}: {exc}") from exc
    return db
