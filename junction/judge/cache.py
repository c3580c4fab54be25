"""A persistent score cache: (model hash, instruction hash, query, document) -> score.

Stored with stdlib ``sqlite3`` in WAL mode (readers never block the writer; two processes
may share the file, each waiting up to ``busy_timeout_s`` for a write lock). The key is the
sha256 of the four fields plus the runtime settings that change a score (KV cache type,
document/query token limits), so a re-run does not re-score and a changed setting does.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

from junction.judge.errors import JudgeError
from junction.judge.instructions import RETRIEVAL_INSTRUCTION, RerankInstruction

__all__ = ["ScoreCache", "score_key", "cached_scores"]


def score_key(model_hash: str, instruction_hash: str, query: str, document: str,
              runtime: str = "") -> str:
    """sha256 (hex) of the fields, NUL-separated (NUL cannot occur in the hashes)."""
    payload = "\0".join((model_hash, instruction_hash, runtime, query, document))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class ScoreCache:
    """sqlite-backed score cache at ``path`` (created with its folder if missing).

    Raises ``JudgeError`` naming the file if it cannot be opened.
    """

    def __init__(self, path: Path, busy_timeout_s: float = 30.0) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=busy_timeout_s,
                                       check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS judge_scores ("
                " key TEXT PRIMARY KEY, model_hash TEXT NOT NULL,"
                " instruction_hash TEXT NOT NULL, score REAL NOT NULL)"
            )
        except sqlite3.Error as exc:
            raise JudgeError(f"cannot open the judge score cache {self.path}: {exc}") from exc
        self._lock = threading.Lock()

    def get_many(self, keys: Sequence[str]) -> dict[str, float]:
        """Cached scores for the keys that are present."""
        if not keys:
            return {}
        out: dict[str, float] = {}
        with self._lock:
            for lo in range(0, len(keys), 500):
                chunk = list(keys[lo: lo + 500])
                marks = ",".join("?" * len(chunk))
                rows = self._db.execute(
                    f"SELECT key, score FROM judge_scores WHERE key IN ({marks})", chunk)
                out.update(rows.fetchall())
        return out

    def put_many(self, rows: Sequence[tuple[str, str, str, float]]) -> None:
        """Store (key, model_hash, instruction_hash, score) rows; existing keys are kept."""
        if not rows:
            return
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany(
                    "INSERT OR IGNORE INTO judge_scores VALUES (?, ?, ?, ?)", rows)
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM judge_scores").fetchone()[0]


def cached_scores(judge, cache: ScoreCache | None, query: str, documents: Sequence[str],
                  instruction: RerankInstruction = RETRIEVAL_INSTRUCTION) -> list[float]:
    """Scores of ``documents`` against ``query`` (logits), scoring only cache misses.

    Misses are scored together in one batch call (``LlamaJudge.score``) and stored.
    """
    if cache is None:
        return judge.score(query, documents, instruction).scores
    cfg = judge.config
    runtime = f"{cfg.kv_type}:{cfg.max_query_tokens}:{cfg.max_document_tokens}"
    ihash = judge.instruction_hash(instruction)
    keys = [score_key(judge.model_hash, ihash, query, d, runtime) for d in documents]
    found = cache.get_many(keys)
    missing = sorted({k: i for i, k in enumerate(keys) if k not in found}.values())
    if missing:
        fresh = judge.score(query, [documents[i] for i in missing], instruction).scores
        rows = [(keys[i], judge.model_hash, ihash, s) for i, s in zip(missing, fresh)]
        cache.put_many(rows)
        found.update({keys[i]: s for i, s in zip(missing, fresh)})
    return [found[k] for k in keys]
