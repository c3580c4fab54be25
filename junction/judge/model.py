"""Judge configuration.

The default judge is the embedded Qwen2.5-Coder-0.5B-Instruct (``junction.models``: PyPI
parts assembled once under the state folder, pinned size and sha256); Gemma 3 270M is
``embedded="gemma3-270m"`` and any other GGUF is one ``model_path`` away.

``junction.judge.scorer.load_judge(config)`` returns one ``LlamaJudge`` per distinct
config per process, so a worker loads the model once, not once per call.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from junction.models import DEFAULT_MODEL, EMBEDDED_MODELS, embedded_model_path, file_sha256

__all__ = [
    "KV_TYPES",
    "JudgeConfig",
    "embedded_model_path",
    "file_sha256",
]

KV_TYPES = ("f16", "q8_0", "q4_0")
"""KV cache types the judge supports (ggml type names); q8_0 is the default."""


class JudgeConfig(BaseModel):
    """How to load and run the judge. Frozen; hashable (the model cache key).

    - ``model_path``: a GGUF file; ``None`` = the embedded model named ``embedded``
    - ``embedded``: an embedded model name (``junction.models.EMBEDDED_MODELS``); default
      Qwen2.5-Coder-0.5B-Instruct, ``gemma3-270m`` the previous default
    - ``template``: ``auto`` (from GGUF metadata), ``few_shot`` or ``qwen3_reranker``
    - ``kv_type``: K and V cache type (``KV_TYPES``); quantised V needs flash attention,
      which is always on
    - ``n_threads``: CPU threads for decode (fixed, for reproducible timings and scores);
      1 by default: on this project's shared 2-core machines one thread scored a pair in
      1.6 s where two took 6.5 s (llama.cpp's threads wait on each other when another
      process holds a core; ``docs/measurement.md``); use 2 on a quiet machine
    - ``n_seq``: sequence slots; slot 0 holds the prefix, slot 1 the query, the rest are
      candidates (so ``n_seq - 2`` candidates per ``llama_decode``); 16 (``llama_decode``
      groups of 14 candidates)
    - ``n_ctx``: KV cells shared by all slots (unified cache), tokens
    - ``n_batch``: most tokens per ``llama_decode`` call; ``n_ubatch``: physical micro-batch
      (2048: a whole candidate group in one pass; measured faster than 512 on 2 cores)
    - ``max_query_tokens`` / ``max_document_tokens``: longer texts are cut (tokens; the
      template's literals always stay) and each cut is reported
    - ``swa_full``: keep a full-size sliding-window cache (needed to fork Gemma 3's
      sliding-window layers from a shared prefix; see ``LlamaJudge``)
    - ``kv_unified``: one KV buffer shared by all slots (a fork shares the prefix cells);
      off, each slot has its own ``n_ctx / n_seq`` cells and a fork copies them
    - ``vocab_only``: load the tokenizer only (no weights, no context): enough for the
      first two smoke gates and token counts; scoring raises ``JudgeError``
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    model_path: Path | None = None
    embedded: str = DEFAULT_MODEL
    template: Literal["auto", "few_shot", "qwen3_reranker"] = "auto"
    kv_type: Literal["f16", "q8_0", "q4_0"] = "q8_0"
    n_threads: int = Field(default=1, ge=1)
    n_seq: int = Field(default=16, ge=3, le=256)
    n_ctx: int = Field(default=4096, ge=256)
    n_batch: int = Field(default=4096, ge=32)
    n_ubatch: int = Field(default=2048, ge=32)
    max_query_tokens: int = Field(default=128, ge=1)
    max_document_tokens: int = Field(default=192, ge=1)
    swa_full: bool = True
    kv_unified: bool = True
    vocab_only: bool = False

    @model_validator(mode="after")
    def _sizes(self) -> JudgeConfig:
        if self.embedded not in EMBEDDED_MODELS:
            raise ValueError(f"embedded: unknown model {self.embedded!r}; embedded models: "
                             f"{', '.join(EMBEDDED_MODELS)}")
        if self.n_batch > self.n_ctx:
            raise ValueError(f"n_batch ({self.n_batch}) must be <= n_ctx ({self.n_ctx})")
        return self
