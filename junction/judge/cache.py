"""A persistent score cache: (model hash, instruction hash, runtime, query, document) -> score.

Stored with stdlib ``sqlite3`` in WAL mode (readers never block the writer; two processes
may share the file, each waiting up to ``busy_timeout_s`` for a write lock). The key is the
sha256 of the fields, where the instruction hash covers the template and the runtime is
``LlamaJudge.runtime_key()`` (KV types, ``n_seq``, batch sizes, ``swa_full``, threads,
token limits, llama.cpp version), so a re-run does not re-score and a changed setting does.

``judge_documents`` is the lane's entry point: cached scores plus each document's status
(``scored`` / ``empty``), its truncation and whether the batch is degenerate.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from junction.judge.errors import JudgeError
from junction.judge.instructions import RETRIEVAL_INSTRUCTION, RerankInstruction
from junction.judge.templates import normalise_text
from junction.sqlite_cache import open_wal


def is_empty_document(text: str) -> bool:
    """True when ``text`` is empty or whitespace only (such a document is never scored)."""
    return not normalise_text(text)

__all__ = ["JudgedBatch", "ScoreCache", "cached_scores", "judge_documents", "score_key"]


def score_key(model_hash: str, instruction_hash: str, query: str, document: str,
              runtime: str = "") -> str:
    """sha256 (hex) of the fields, NUL-separated (NUL cannot occur in the hashes)."""
    payload = "\0".join((model_hash, instruction_hash, runtime, query, document))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class ScoreCache:
    """sqlite-backed score cache at ``path`` (created with its folder if missing; a corrupt
    file is moved aside and a fresh one made: ``junction.sqlite_cache.check_cache``).

    Raises ``JudgeError`` naming the file if it cannot be opened.
    """

    def __init__(self, path: Path, busy_timeout_s: float = 30.0) -> None:
        self.path = Path(path)
        self._db = open_wal(
            self.path,
            "CREATE TABLE IF NOT EXISTS judge_scores ("
            " key TEXT PRIMARY KEY, model_hash TEXT NOT NULL,"
            " instruction_hash TEXT NOT NULL, score REAL NOT NULL)",
            JudgeError, "judge score cache", busy_timeout_s)
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


@dataclass(frozen=True)
class JudgedBatch:
    """One query's judged documents, input order.

    - ``scores``: logits, ``None`` for a skipped document
    - ``statuses``: ``scored`` or ``empty`` per document
    - ``truncations``: document index -> (original tokens, kept tokens) for each cut one
    - ``degenerate``: at least ``DEGENERATE_MIN_DOCUMENTS`` distinct scored documents whose
      scores all lie within ``noise_floor`` of each other: the judge told them apart by
      nothing (the "every score is 0.5" failure), so no score of the batch means anything
    """

    scores: list[float | None]
    statuses: list[str]
    truncations: dict[int, tuple[int, int]] = field(default_factory=dict)
    degenerate: bool = False


DEGENERATE_MIN_DOCUMENTS = 3
"""Distinct documents needed before equal scores count as degenerate: two documents can
honestly tie, three or more different ones all within the noise floor are not judged."""


def judge_documents(judge, cache: ScoreCache | None, query: str, documents: Sequence[str],
                    instruction: RerankInstruction = RETRIEVAL_INSTRUCTION,
                    noise_floor: float = 0.0) -> JudgedBatch:
    """Judge ``documents`` against ``query``: scores only cache misses (one batch call,
    ``LlamaJudge.score``), skips empty ones, reports truncations (by tokenising, so cached
    documents report them too) and flags a degenerate batch (``JudgedBatch``)."""
    empty = [is_empty_document(d) for d in documents]
    scores: list[float | None] = [None] * len(documents)
    todo = [i for i, e in enumerate(empty) if not e]
    if cache is None:
        fresh = judge.score(query, [documents[i] for i in todo], instruction).scores
        for i, s in zip(todo, fresh, strict=True):
            scores[i] = s
    else:
        ihash = judge.instruction_hash(instruction)
        runtime = judge.runtime_key()
        keys = {i: score_key(judge.model_hash, ihash, query, documents[i], runtime) for i in todo}
        found = cache.get_many(list(keys.values()))
        missing = sorted({keys[i]: i for i in todo if keys[i] not in found}.values())
        if missing:
            fresh = judge.score(query, [documents[i] for i in missing], instruction).scores
            cache.put_many([(keys[i], judge.model_hash, ihash, s)
                            for i, s in zip(missing, fresh, strict=True)])
            found.update({keys[i]: s for i, s in zip(missing, fresh, strict=True)})
        for i in todo:
            scores[i] = found[keys[i]]
    limit = judge.config.max_document_tokens
    truncations = {}
    for i in todo:
        n = judge.document_tokens(documents[i])[1]
        if n > limit:
            truncations[i] = (n, limit)
    scored = [(normalise_text(documents[i]), scores[i]) for i in todo]
    distinct = {text for text, _ in scored}
    values = [cast(float, s) for _, s in scored]  # todo: non-empty documents, all scored
    degenerate = (len(distinct) >= DEGENERATE_MIN_DOCUMENTS
                  and max(values) - min(values) <= noise_floor)
    return JudgedBatch(scores=scores, statuses=["empty" if e else "scored" for e in empty],
                       truncations=truncations, degenerate=degenerate)


def cached_scores(judge, cache: ScoreCache | None, query: str, documents: Sequence[str],
                  instruction: RerankInstruction = RETRIEVAL_INSTRUCTION) -> list[float | None]:
    """Scores of ``documents`` against ``query`` (logits; ``None`` for an empty document),
    scoring only cache misses (``judge_documents``)."""
    return judge_documents(judge, cache, query, documents, instruction).scores
