"""One way to open the project's persistent caches: a stdlib ``sqlite3`` file in WAL mode.

WAL mode lets readers run while one writer writes; two processes may share a file, each
waiting up to ``busy_timeout_s`` for a write lock. Used by the judge's score cache
(``junction.judge.cache``) and the agent's generation cache (``junction.agent.llm``).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

__all__ = ["open_wal"]


def open_wal(path: Path, create_sql: str, error: type[Exception], what: str,
             busy_timeout_s: float = 30.0) -> sqlite3.Connection:
    """Open (creating the folder and the table) the cache at ``path``; autocommit mode.

    Raises ``error`` with a message naming ``what`` and the file when sqlite refuses.
    """
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
