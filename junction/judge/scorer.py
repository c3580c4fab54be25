"""The yes/no judge on llama.cpp, with prefix-shared batch scoring.

score(query, document) = logit("yes") - logit("no") at the answer position (logits;
comparable only within one query and one instruction).

Batch path (``LlamaJudge.score``), on the low-level llama.cpp API:

1. the prefix (system line, instruction, examples) is decoded once per instruction into
   sequence 0 and kept, and its KV state saved: a switch back to an instruction decoded
   before restores that state (``_SAVED_PREFIXES``) instead of decoding it again;
2. each query is decoded once into sequence 1, forked from 0 with ``llama_memory_seq_cp``
   (a unified KV cache, ``kv_unified``, makes a fork a metadata copy: the cells are shared);
3. candidates fork from sequence 1 into slots 2..n_seq-1, grouped up to the free slots and
   the free KV cells; one ``llama_decode`` per group, logits requested only at each
   candidate's last token; the group's sequences are then removed.

Naive path (``LlamaJudge.score_naive``): the whole prompt of each candidate decoded from an
empty cache, one candidate at a time: the reference the batch path is measured against.

Gemma 3 interleaves sliding-window layers (window 512 tokens) with global ones. With the
default small sliding-window cache (``swa_full`` off) llama.cpp prunes cells that fall out
of a sequence's window after each batch, and a fork can only copy what is left; with
``swa_full`` on, the sliding-window cache is full size, so forked sequences see the same
cells as a fresh decode and the window is applied by the attention mask alone. The judge
therefore turns ``swa_full`` on by default (``JudgeConfig.swa_full``).

Decoding uses a fixed thread count and no sampling, so the same inputs in the same groups
give the same scores. The batch path differs from the naive path by the KV-cache noise
floor measured by ``bench/perf/judge_throughput.py`` (per cache type).

Tokenising (the prompt's parts, the answer tokens): prompt_tokens.py; what a call returns:
batch.py; the llama.cpp binding: llama.py.
"""

from __future__ import annotations

import copy
import ctypes
import hashlib
import json
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from junction.judge.batch import ScoreBatch, Truncation, skipping_empty
from junction.judge.errors import JudgeError
from junction.judge.instructions import RETRIEVAL_INSTRUCTION, RerankInstruction
from junction.judge.llama import llama_cpp_module
from junction.judge.model import JudgeConfig, embedded_model_path, file_sha256
from junction.judge.prompt_tokens import PromptTokens
from junction.judge.templates import PromptTemplate, choose_template, get_template

__all__ = ["NOISE_FLOOR_LOGITS", "LlamaJudge", "load_judge"]

NOISE_FLOOR_LOGITS = {"f16": 0.44, "q8_0": 0.22, "q4_0": 1.06}
"""Shipped noise floor per KV cache type (logits) of the embedded Gemma 3 270M only, so that
model needs no measurement: the larger of one passage's spread across batch slots and the
largest batch-vs-naive gap (docs/measurement.md, "Judge throughput"). Any other model, the
default Qwen included, is measured once by ``junction judge noise`` (``noise.noise_floor``).
Score differences below the floor mean nothing."""

_GGML_TYPES = {"f16": 1, "q4_0": 2, "q8_0": 8}  # enum ggml_type values (ggml.h)
_PREFIX_SEQ = 0
_QUERY_SEQ = 1


@dataclass
class _ContextState:
    """Which prefix sequence 0 of the context currently holds (``None``: nothing kept), and
    the saved KV state of the last prefixes decoded (``saved``: prefix key -> (llama.cpp's
    sequence state bytes, prefix length), at most ``_SAVED_PREFIXES``, oldest first)."""

    prefix_key: str | None = None
    prefix_len: int = 0
    saved: dict[str, tuple[ctypes.Array[ctypes.c_uint8], int]] = field(default_factory=dict)


_SAVED_PREFIXES = 4
"""How many prefixes' KV states the judge keeps to restore instead of decoding again: a
caller alternating between instructions (``subtask_admission``: follows, then echo, task
after task; the smoke gates of two instructions) would otherwise decode a prefix at every
switch. Each state holds the prefix's KV cells of every layer (bytes: ``n_prefix`` ×
layers × the K and V widths × the cache type's size)."""


class LlamaJudge(PromptTokens):
    """A loaded judge model and one llama.cpp context (see the module docstring).

    Construct through ``junction.judge.load_judge`` (one per config per process). Calls are
    serialised by a lock: one context cannot decode two batches at once.
    Raises ``JudgeError`` naming the file when the model cannot be loaded.
    """

    # llama.cpp handles from the binding (``PromptTokens`` declares ``_L``, ``_vocab``,
    # ``_ctx``); ``_batch`` is None for a vocab-only judge, which has no ``_mem``
    _model: Any
    _batch: Any
    _mem: Any

    def __init__(self, config: JudgeConfig) -> None:
        L = llama_cpp_module()
        self._L = L
        self.config = config
        path = (Path(config.model_path) if config.model_path
                else embedded_model_path(config.embedded))
        if not path.is_file():
            raise JudgeError(f"judge model file not found: {path}")
        self.model_path = path
        self.model_hash = file_sha256(path)
        self._lock = threading.Lock()
        L.llama_backend_init()
        mparams = L.llama_model_default_params()
        mparams.vocab_only = config.vocab_only
        self._model = L.llama_model_load_from_file(str(path).encode(), mparams)
        if not self._model:
            raise JudgeError(f"llama.cpp could not load the judge model {path}")
        self._vocab = L.llama_model_get_vocab(self._model)
        self.metadata = self._read_metadata()
        self.template: PromptTemplate = (
            choose_template(self.metadata) if config.template == "auto"
            else get_template(config.template)
        )
        self._shared = _ContextState()  # shared with with_template() views
        self._literal_splits: dict[str, tuple[str, str]] = {}
        self.n_vocab = L.llama_vocab_n_tokens(self._vocab)
        self._owner = True
        self._ctx = self._batch = None
        if config.vocab_only:
            return
        cparams = L.llama_context_default_params()
        cparams.n_ctx = config.n_ctx
        cparams.n_batch = config.n_batch
        cparams.n_ubatch = config.n_ubatch
        cparams.n_seq_max = config.n_seq
        cparams.n_threads = config.n_threads
        cparams.n_threads_batch = config.n_threads
        cparams.flash_attn_type = L.LLAMA_FLASH_ATTN_TYPE_ENABLED
        cparams.type_k = _GGML_TYPES[config.kv_type]
        cparams.type_v = _GGML_TYPES[config.kv_type]
        cparams.kv_unified = config.kv_unified
        cparams.swa_full = config.swa_full
        cparams.no_perf = True
        self._ctx = L.llama_init_from_model(self._model, cparams)
        if not self._ctx:
            raise JudgeError(f"llama.cpp could not create a context for {path} with {config}")
        self._mem = L.llama_get_memory(self._ctx)
        self._batch = L.llama_batch_init(config.n_batch, 0, 1)

    def with_template(self, template: PromptTemplate) -> LlamaJudge:
        """A view of this judge (same model, context and lock) that prompts with ``template``.

        Used by the smoke tests and for trying layouts without a second model load; the
        prefix cache key includes the template, so the two views never share a stale prefix.
        """
        view = copy.copy(self)
        view.template = template
        view._owner = False
        view._literal_splits = {}
        return view

    def __del__(self) -> None:  # pragma: no cover - interpreter shutdown order varies
        if not getattr(self, "_owner", False):
            return
        try:
            L = self._L
            if self._ctx is not None:
                L.llama_batch_free(self._batch)
                L.llama_free(self._ctx)
            L.llama_model_free(self._model)
        except Exception:
            pass

    # -- metadata ----------------------------------------------------------------------
    def _read_metadata(self) -> dict[str, str]:
        L = self._L
        out: dict[str, str] = {}
        size = 1 << 16
        buf = ctypes.create_string_buffer(size)
        for i in range(L.llama_model_meta_count(self._model)):
            if L.llama_model_meta_key_by_index(self._model, i, buf, size) < 0:
                continue
            key = buf.value.decode("utf-8", "replace")
            if L.llama_model_meta_val_str_by_index(self._model, i, buf, size) < 0:
                continue
            out[key] = buf.value.decode("utf-8", "replace")
        return out

    def runtime(self) -> dict[str, object]:
        """Every runtime setting that can move a score: model sha256, KV type, slots
        (``n_seq``), cache and batch sizes, ``swa_full``, ``kv_unified``, threads, token
        limits and the llama-cpp-python version (which pins llama.cpp)."""
        cfg = self.config
        return {"model_hash": self.model_hash, "kv_type": cfg.kv_type, "n_seq": cfg.n_seq,
                "n_ctx": cfg.n_ctx, "n_batch": cfg.n_batch, "n_ubatch": cfg.n_ubatch,
                "swa_full": cfg.swa_full, "kv_unified": cfg.kv_unified,
                "n_threads": cfg.n_threads, "max_query_tokens": cfg.max_query_tokens,
                "max_document_tokens": cfg.max_document_tokens,
                "llama_cpp_version": self._L.__version__}

    def runtime_key(self) -> str:
        """sha256 (hex) of ``runtime()``: the score cache and the noise floor key on it."""
        payload = json.dumps(self.runtime(), sort_keys=True)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()

    def provenance(self, instruction: RerankInstruction = RETRIEVAL_INSTRUCTION) -> dict:
        """What a trace records about the judge: ``runtime()`` plus the template name and
        the instruction hash (``PromptTemplate.prompt_hash``)."""
        return {**self.runtime(), "template": self.template.name,
                "instruction_hash": self.instruction_hash(instruction)}

    def instruction_hash(self, instruction: RerankInstruction = RETRIEVAL_INSTRUCTION) -> str:
        """sha256 of everything that shapes the prompt (``PromptTemplate.prompt_hash``)."""
        return self.template.prompt_hash(instruction)

    # -- decoding ------------------------------------------------------------------------
    def _decode(self, items: Sequence[tuple[int, int, int, bool]]) -> None:
        """One ``llama_decode`` over (token, position, sequence, wants_logits) items."""
        b = self._batch
        for i, (tok, pos, seq, out) in enumerate(items):
            b.token[i] = tok
            b.pos[i] = pos
            b.n_seq_id[i] = 1
            b.seq_id[i][0] = seq
            b.logits[i] = out
        b.n_tokens = len(items)
        rc = self._L.llama_decode(self._ctx, b)
        if rc != 0:
            raise JudgeError(
                f"llama_decode returned {rc} for {len(items)} tokens "
                f"(1: no KV slot; raise n_ctx={self.config.n_ctx} or lower max_document_tokens)"
            )

    def _decode_sequence(self, tokens: Sequence[int], start: int, seq: int, last_logits: bool):
        step = self.config.n_batch
        for lo in range(0, len(tokens), step):
            chunk = tokens[lo: lo + step]
            final = lo + step >= len(tokens)
            self._decode([(tok, start + lo + i, seq, last_logits and final and i == len(chunk) - 1)
                          for i, tok in enumerate(chunk)])

    def _gap(self, index: int, yes: int, no: int) -> float:
        logits = self._L.llama_get_logits_ith(self._ctx, index)
        value = float(logits[yes]) - float(logits[no])
        if not math.isfinite(value):
            raise JudgeError(f"non-finite logit gap {value!r} at batch index {index}")
        return value

    def _ensure_prefix(self, instruction: RerankInstruction) -> int:
        """Make sequence 0 hold the prefix of ``instruction`` on an otherwise empty cache;
        returns its length (tokens). A prefix decoded before is restored from its saved
        state (``llama_state_seq_set_data`` into the cleared cache: the same cells, from
        the first, with the same values a decode writes there), else it is decoded and its
        state saved (``_SAVED_PREFIXES``)."""
        key = self.instruction_hash(instruction)
        shared, L = self._shared, self._L
        if shared.prefix_key == key:
            return shared.prefix_len
        L.llama_memory_clear(self._mem, True)
        shared.prefix_key = None
        saved = shared.saved.get(key)
        if saved is not None:
            state, n = saved
            if L.llama_state_seq_set_data(self._ctx, state, len(state), _PREFIX_SEQ) == 0:
                raise JudgeError(f"llama.cpp could not restore the judge's prefix ({n} tokens)")
        else:
            tokens = self.prefix_tokens(instruction)
            self._decode_sequence(tokens, 0, _PREFIX_SEQ, last_logits=False)
            n = len(tokens)
            if _SAVED_PREFIXES > 0:  # 0: nothing is saved, nor copied out of llama.cpp
                size = L.llama_state_seq_get_size(self._ctx, _PREFIX_SEQ)
                state = (ctypes.c_uint8 * size)()
                if L.llama_state_seq_get_data(self._ctx, state, size, _PREFIX_SEQ) == size:
                    shared.saved[key] = (state, n)
                    while len(shared.saved) > _SAVED_PREFIXES:
                        del shared.saved[next(iter(shared.saved))]
        shared.prefix_key, shared.prefix_len = key, n
        return n

    def _prepare(self, query: str, documents: Sequence[str]):
        q_tokens, q_len = self.query_tokens(query)
        truncations = []
        if q_len > self.config.max_query_tokens:
            truncations.append(Truncation("query", 0, q_len, self.config.max_query_tokens))
        docs = []
        for i, doc in enumerate(documents):
            d_tokens, d_len = self.document_tokens(doc)
            if d_len > self.config.max_document_tokens:
                truncations.append(Truncation("document", i, d_len,
                                              self.config.max_document_tokens))
            docs.append(d_tokens)
        return q_tokens, docs, truncations

    @skipping_empty
    def score(
        self, query: str, documents: Sequence[str],
        instruction: RerankInstruction = RETRIEVAL_INSTRUCTION,
    ) -> ScoreBatch:
        """Batch path: logit gaps of ``documents`` against ``query`` (module docstring).

        Empty and whitespace-only documents are skipped (``ScoreBatch.statuses``). Raises
        ``JudgeError`` if llama.cpp fails or a prompt cannot fit ``n_ctx``.
        """
        if not documents:
            return ScoreBatch(scores=[])
        yes, no = self._answer_ids()
        with self._lock:
            q_tokens, docs, truncations = self._prepare(query, documents)
            L, mem, cfg = self._L, self._mem, self.config
            n_prefix = self._ensure_prefix(instruction)
            try:
                L.llama_memory_seq_rm(mem, _QUERY_SEQ, -1, -1)
                L.llama_memory_seq_cp(mem, _PREFIX_SEQ, _QUERY_SEQ, -1, -1)
                self._decode_sequence(q_tokens, n_prefix, _QUERY_SEQ, last_logits=False)
                start = n_prefix + len(q_tokens)
                capacity = min(cfg.n_batch, cfg.n_ctx - start)
                if not cfg.kv_unified:  # each slot has its own n_ctx / n_seq cells
                    capacity = cfg.n_batch
                slots = cfg.n_seq - 2
                scores: list[float | None] = [0.0] * len(docs)
                order = list(range(len(docs)))
                i = 0
                while i < len(order):
                    group: list[int] = []
                    used = 0
                    while (i < len(order) and len(group) < slots
                           and used + len(docs[order[i]]) <= capacity):
                        group.append(order[i])
                        used += len(docs[order[i]])
                        i += 1
                    if not group:
                        raise JudgeError(
                            f"document {order[i]} needs {len(docs[order[i]])} tokens but only "
                            f"{capacity} KV cells are free after the prefix and query"
                        )
                    items, last = [], []
                    for slot, d in enumerate(group):
                        seq = 2 + slot
                        L.llama_memory_seq_cp(mem, _QUERY_SEQ, seq, -1, -1)
                        toks = docs[d]
                        for j, tok in enumerate(toks):
                            items.append((tok, start + j, seq, j == len(toks) - 1))
                        last.append(len(items) - 1)
                    try:
                        self._decode(items)
                        for d, idx in zip(group, last, strict=True):
                            scores[d] = self._gap(idx, yes, no)
                    finally:
                        for slot in range(len(group)):
                            L.llama_memory_seq_rm(mem, 2 + slot, -1, -1)
            except Exception:
                L.llama_memory_clear(mem, True)
                self._shared.prefix_key = None
                raise
            finally:
                L.llama_memory_seq_rm(mem, _QUERY_SEQ, -1, -1)
        return ScoreBatch(scores=scores, truncations=truncations,
                          candidate_tokens=[len(d) for d in docs])

    @skipping_empty
    def score_naive(
        self, query: str, documents: Sequence[str],
        instruction: RerankInstruction = RETRIEVAL_INSTRUCTION,
    ) -> ScoreBatch:
        """Naive path: each candidate's whole prompt decoded from an empty cache (reference)."""
        if not documents:
            return ScoreBatch(scores=[])
        yes, no = self._answer_ids()
        with self._lock:
            q_tokens, docs, truncations = self._prepare(query, documents)
            prefix = self.prefix_tokens(instruction)
            L = self._L
            self._shared.prefix_key = None
            scores: list[float | None] = []
            try:
                for d_tokens in docs:
                    L.llama_memory_clear(self._mem, True)
                    tokens = prefix + q_tokens + d_tokens
                    self._decode_sequence(tokens, 0, _PREFIX_SEQ, last_logits=True)
                    scores.append(self._gap(-1, yes, no))
            finally:
                L.llama_memory_clear(self._mem, True)
        return ScoreBatch(scores=scores, truncations=truncations,
                          candidate_tokens=[len(d) for d in docs])

    def decode_raw(self, tokens: Sequence[int]) -> None:
        """Decode ``tokens`` as one prompt from an empty cache (throughput reference)."""
        with self._lock:
            self._shared.prefix_key = None
            self._L.llama_memory_clear(self._mem, True)
            try:
                self._decode_sequence(list(tokens), 0, _PREFIX_SEQ, last_logits=True)
            finally:
                self._L.llama_memory_clear(self._mem, True)


_JUDGES: dict[JudgeConfig, object] = {}
_JUDGES_LOCK = threading.Lock()


def load_judge(config: JudgeConfig | None = None):
    """The process-wide ``LlamaJudge`` for ``config`` (default config: the embedded model).

    Loaded on first use and cached per config. Raises ``JudgeError`` if the model file is
    missing or llama.cpp cannot load it.
    """
    config = config or JudgeConfig()
    with _JUDGES_LOCK:
        judge = _JUDGES.get(config)
        if judge is None:
            judge = LlamaJudge(config)
            _JUDGES[config] = judge
        return judge
