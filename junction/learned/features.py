"""Candidate and pair features for the learned relevance model, from the router view only.

A feature vector is computed from a ``RouterView`` and its candidate pools (the lanes'
BM25 scores, ``junction.candidates``), never from a ``BenchmarkTask``: gold ids, the
verifier and task metadata cannot reach it (tests/test_learned.py checks this as a
property). Labels are computed apart, by ``candidate_labels``, on training tasks only.

Unary features (``UNARY_FEATURES``, one row per candidate of a lane, floats):

- ``bm25``, ``log_bm25``: the lane's score and log(1 + score) (BM25 under the default pool
  rule; the fused or cosine score under the others, ``junction.candidates.POOL_RULES``);
- ``rank``: 0-based rank in the lane; ``normalised``: score / lane's best (0 if best is 0);
- ``margin_next``: score minus the next candidate's score in the lane (0 for the last);
- ``gap_best``: best score minus this score; ``log_lane_best``: log(1 + best score), how
  well anything in the lane matches the query at all;
- ``matched``: 1 if the score is > 0; ``pool_size``: candidates in the lane;
- ``log_tokens``: log(1 + token cost) (absolute: p(gold) must not move with the budget,
  which enters the objective instead, ``junction.learned.utility``);
- ``schema_params``: parameters in a tool's JSON schema (0 for contexts);
- ``name_overlap``: share of the tool id's terms (split at ``_ . -`` and camel case) that
  are query terms (0 for contexts); ``query_terms``: log(1 + distinct query terms);
- ``query_coverage``: share of the distinct query terms found in the candidate's lane text
  (a context's content, a tool's description and rendered schema, as BM25 indexes them);
- ``source_<kind>``: one-hot ``SourceKind`` of a context (all 0 for tools);
- ``judge``: the judge's score (logits) when judge scores are given, else absent from the
  feature list (a model is fitted with or without it, never half).

Pair features (``PAIR_FEATURES``, one row per context x tool of the pools): both members'
unary probabilities as logits, both lanes' normalised scores, ``tool_terms_in_context``
(share of the tool id's terms in the context's tokens), ``pair_prior``, the training
rate at which the tool id was gold together with a gold context (``PairPrior``), and
``id_named``: 1 if the context's text names the tool id verbatim as a whole identifier.

What does not depend on a fitted model is computed once per (router view, pools) and kept
for the process (``view_features``): the unary matrices, the pairs' model-free columns and
the pool's resources. The cache key is built from the ``RouterView`` alone
(``view_fingerprint``: a sha256 of its task id and of what the features and the BM25 pools
read: objective; contexts' id, content, tokens and source; tools' id, description, schema
and tokens) and the pools' (id, kind, score, rank) lists; a ``BenchmarkTask`` is refused,
so gold, verifier and metadata cannot reach a key or a cached row. ``pair_features`` then
adds the columns that do depend on the model (the unary logits, the pair prior) to the
cached ones, with the same arithmetic as one row at a time, so a cached matrix equals a
fresh one bit for bit.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from junction.candidates import Candidate, CandidatePools
from junction.resources import ContextResource, SourceKind, ToolResource
from junction.tasks import BenchmarkTask, RouterView
from junction.text import _identifiers, lexical_tokens, names_id

__all__ = [
    "LINK_FEATURES",
    "PAIR_FEATURES",
    "UNARY_FEATURES",
    "VIEW_CACHE_SIZE",
    "ViewFeatures",
    "cached_view_features",
    "candidate_labels",
    "clear_view_cache",
    "name_terms",
    "names_id",
    "pair_features",
    "pair_matrix",
    "unary_features",
    "view_features",
    "view_fingerprint",
]

UNARY_FEATURES = (
    "bm25", "log_bm25", "rank", "normalised", "margin_next", "gap_best", "log_lane_best",
    "matched", "pool_size", "log_tokens", "schema_params", "name_overlap",
    "query_terms", "query_coverage", *(f"source_{k.value}" for k in SourceKind),
)
"""Unary feature names, in column order (``judge`` is appended when judge scores are used)."""

LINK_FEATURES = ("link_best", "link_count")
"""Link unary features (a ``learned_linked`` model appends them to ``UNARY_FEATURES``), read
from which pooled candidates of the other lane a candidate is named by or names
(``junction.text.names_id``): ``link_best``, the best normalised lane score among them
(0 when none); ``link_count``, log(1 + how many there are)."""

PAIR_FEATURES = ("logit_context", "logit_tool", "normalised_context", "normalised_tool",
                 "tool_terms_in_context", "pair_prior", "id_named")
"""Pair feature names, in column order."""

VIEW_CACHE_SIZE = 4096
"""(router view, pools) entries ``view_features`` keeps (least recently used dropped
first): more than a family's training and evaluation tasks of τ-Knowledge or a BFCL
family's training part."""

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SEPARATORS = re.compile(r"[_.\-\s/]+")


@functools.lru_cache(maxsize=65536)
def _name_terms(tool_id: str) -> frozenset[str]:
    return frozenset(lexical_tokens(" ".join(_SEPARATORS.split(_CAMEL.sub(" ", tool_id)))))


def name_terms(tool_id: str) -> set[str]:
    """Lexical terms of a tool id: split at ``_ . - /`` and camel case, then
    ``lexical_tokens`` (so the same normalisation as BM25)."""
    return set(_name_terms(tool_id))


@functools.lru_cache(maxsize=16384)
def _token_set(text: str) -> frozenset[str]:
    """The distinct ``lexical_tokens`` of ``text`` (memoised: documents recur across tasks)."""
    return frozenset(lexical_tokens(text))


def _schema_params(tool: ToolResource) -> int:
    props = tool.json_schema.get("properties")
    return len(props) if isinstance(props, dict) else 0


def _lane_rows(resources: Mapping[str, ContextResource | ToolResource],
               lane: Sequence[Candidate], query: frozenset[str]) -> list[list[float]]:
    best = max((c.score for c in lane), default=0.0)
    rows = []
    for i, c in enumerate(lane):
        resource = resources[c.resource_id]
        nxt = lane[i + 1].score if i + 1 < len(lane) else c.score
        if isinstance(resource, ToolResource):
            text = f"{resource.description} {resource.rendered_schema()}"
            terms = _name_terms(resource.id)
            overlap = len(terms & query) / len(terms) if terms else 0.0
            params, kinds = _schema_params(resource), [0.0] * len(SourceKind)
        else:
            text = resource.content
            overlap, params = 0.0, 0
            kinds = [1.0 if resource.source == k else 0.0 for k in SourceKind]
        row = [c.score, math.log1p(c.score), float(c.rank), c.score / best if best > 0 else 0.0,
               c.score - nxt, best - c.score, math.log1p(best), 1.0 if c.matched else 0.0,
               float(len(lane)), math.log1p(resource.token_cost),
               float(params), overlap, math.log1p(len(query)),
               len(query & _token_set(text)) / len(query) if query else 0.0, *kinds]
        rows.append(row)
    return rows


@dataclass(frozen=True)
class ViewFeatures:
    """What the learned model reads of one router view and its pools, before any model:

    - ``contexts`` / ``tools``: the pools' resources, in the pools' rank order;
    - ``unary``: ``{"context": (n_contexts, F), "tool": (n_tools, F)}`` floats, columns
      ``UNARY_FEATURES`` (no ``judge``);
    - ``pair_keys``: (context id, tool id) for every context x tool of the pools, context
      major, both in rank order (n_contexts * n_tools);
    - ``pair_static``: (n_contexts, n_tools, 3) floats, the model-free pair columns
      ``normalised_context``, ``normalised_tool``, ``tool_terms_in_context``;
    - ``pair_named``: (n_contexts, n_tools) floats, ``id_named`` (1.0 / 0.0);
    - ``link``: ``{"context": (n_contexts, 2), "tool": (n_tools, 2)}`` floats, columns
      ``LINK_FEATURES``.

    Arrays and the ``unary`` mapping are read-only: a ``ViewFeatures`` is shared through the
    process cache.
    """

    contexts: tuple[ContextResource, ...]
    tools: tuple[ToolResource, ...]
    unary: Mapping[str, np.ndarray]
    pair_keys: tuple[tuple[str, str], ...]
    pair_static: np.ndarray
    pair_named: np.ndarray
    link: Mapping[str, np.ndarray]

    @property
    def context_ids(self) -> tuple[str, ...]:
        return tuple(c.id for c in self.contexts)

    @property
    def tool_ids(self) -> tuple[str, ...]:
        return tuple(t.id for t in self.tools)


def _require_view(view: object) -> None:
    if not isinstance(view, RouterView):
        raise TypeError(f"learned features read a RouterView only, not {type(view).__name__} "
                        "(BenchmarkTask.router_view() drops gold, verifier and metadata)")


def view_fingerprint(view: RouterView) -> str:
    """sha256 (hex) of what the features and the BM25 pools read of ``view``: task id,
    objective; each context's id, content, token cost and source; each tool's id,
    description, JSON schema (canonical JSON) and schema token cost, in the view's order.
    Raises ``TypeError`` for anything but a ``RouterView`` (a ``BenchmarkTask`` holds gold)."""
    _require_view(view)
    h = hashlib.sha256()

    def put(value: str) -> None:
        data = value.encode("utf-8", "surrogatepass")
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)

    put(view.task_id)
    put(view.objective)
    for c in view.contexts:
        for value in ("c", c.id, c.content, str(c.token_cost), c.source.value):
            put(value)
    for t in view.tools:
        for value in ("t", t.id, t.description,
                      json.dumps(t.json_schema, sort_keys=True, separators=(",", ":")),
                      str(t.schema_token_cost)):
            put(value)
    return h.hexdigest()


def _pools_key(pools: CandidatePools) -> tuple:
    return tuple(tuple((c.resource_id, c.kind, c.score, c.rank) for c in lane)
                 for lane in (pools.contexts, pools.tools))


def _compute_view_features(view: RouterView, pools: CandidatePools) -> ViewFeatures:
    contexts_by_id = {c.id: c for c in view.contexts}
    tools_by_id = {t.id: t for t in view.tools}
    missing = [c.resource_id for c in pools.contexts if c.resource_id not in contexts_by_id]
    missing += [t.resource_id for t in pools.tools if t.resource_id not in tools_by_id]
    if missing:
        raise KeyError(f"task {view.task_id!r} has no resource {missing[0]!r}")
    query = _token_set(view.objective)
    width = len(UNARY_FEATURES)
    unary = {
        "context": np.asarray(_lane_rows(contexts_by_id, pools.contexts, query),
                              dtype=float).reshape(-1, width),
        "tool": np.asarray(_lane_rows(tools_by_id, pools.tools, query),
                           dtype=float).reshape(-1, width),
    }
    contexts = tuple(contexts_by_id[c.resource_id] for c in pools.contexts)
    tools = tuple(tools_by_id[t.resource_id] for t in pools.tools)
    best_c = max((c.score for c in pools.contexts), default=0.0)
    best_t = max((t.score for t in pools.tools), default=0.0)
    norm_c = [c.score / best_c if best_c > 0 else 0.0 for c in pools.contexts]
    norm_t = [t.score / best_t if best_t > 0 else 0.0 for t in pools.tools]
    terms = [_name_terms(t.id) for t in tools]
    n_c, n_t = len(contexts), len(tools)
    static = np.zeros((n_c, n_t, 3))
    named = np.zeros((n_c, n_t))
    static[:, :, 0] = np.asarray(norm_c, dtype=float).reshape(n_c, 1)
    static[:, :, 1] = np.asarray(norm_t, dtype=float).reshape(1, n_t)
    for i, c in enumerate(contexts):
        tokens = _token_set(c.content)
        static[i, :, 2] = [len(ts & tokens) / len(ts) if ts else 0.0 for ts in terms]
        named[i, :] = [1.0 if names_id(c.content, t.id) else 0.0 for t in tools]
    link = {"context": _link_rows(named, norm_t), "tool": _link_rows(named.T, norm_c)}
    for array in (*unary.values(), static, named, *link.values()):
        array.setflags(write=False)
    keys = tuple((c.id, t.id) for c in contexts for t in tools)
    return ViewFeatures(contexts, tools, MappingProxyType(unary), keys, static, named,
                        MappingProxyType(link))


def _link_rows(named: np.ndarray, partner_norm: Sequence[float]) -> np.ndarray:
    """``LINK_FEATURES`` per row of ``named`` (rows: this lane; columns: the other lane's
    pooled candidates, 1.0 where the pair names one another), from the partners'
    normalised scores."""
    out = np.zeros((named.shape[0], len(LINK_FEATURES)))
    norm = np.asarray(partner_norm, dtype=float)
    for i in range(named.shape[0]):
        hit = named[i] > 0
        if hit.any():
            out[i] = (float(norm[hit].max()), math.log1p(int(hit.sum())))
    return out


_VIEW_CACHE: OrderedDict[tuple, ViewFeatures] = OrderedDict()
_VIEW_LOCK = threading.Lock()


def view_features(view: RouterView, pools: CandidatePools) -> ViewFeatures:
    """The model-free features of ``view`` and its ``pools`` (``ViewFeatures``), computed
    once per process for equal (``view_fingerprint``, pools' (id, kind, score, rank) lists)
    and kept for the ``VIEW_CACHE_SIZE`` most recently used (thread-safe; two threads
    missing at once both compute, and the entries are equal).

    Raises ``TypeError`` for anything but a ``RouterView``, ``KeyError`` naming a candidate
    the view does not hold."""
    return cached_view_features(view, pools, view_fingerprint(view))


def cached_view_features(view: RouterView, pools: CandidatePools,
                         fingerprint: str) -> ViewFeatures:
    """``view_features`` with ``view_fingerprint(view)`` already known (``fingerprint``)."""
    _require_view(view)
    key = (fingerprint, _pools_key(pools))
    with _VIEW_LOCK:
        hit = _VIEW_CACHE.get(key)
        if hit is not None:
            _VIEW_CACHE.move_to_end(key)
            return hit
    out = _compute_view_features(view, pools)
    with _VIEW_LOCK:
        _VIEW_CACHE[key] = out
        while len(_VIEW_CACHE) > VIEW_CACHE_SIZE:
            _VIEW_CACHE.popitem(last=False)
    return out


def clear_view_cache() -> None:
    """Forget every cached ``ViewFeatures`` and the memoised token sets, name terms and
    identifiers (tests and benchmarks measure a cold start)."""
    with _VIEW_LOCK:
        _VIEW_CACHE.clear()
    for memo in (_name_terms, _token_set, _identifiers):
        memo.cache_clear()


def unary_features(view: RouterView, pools: CandidatePools,
                   judge: Mapping[str, float] | None = None) -> dict[str, np.ndarray]:
    """Feature matrices per lane: ``{"context": (n_contexts, F), "tool": (n_tools, F)}``,
    rows in the pools' rank order, columns ``UNARY_FEATURES`` (+ ``judge``); fresh,
    writable arrays (the cached ones are copied).

    ``judge``: resource id -> judge score (logits) for every pool candidate, or None.
    Raises ``KeyError`` naming a candidate the view does not hold or the judge did not score.
    """
    cached = view_features(view, pools)
    if judge is None:
        return {lane: X.copy() for lane, X in cached.unary.items()}
    out = {}
    for lane, cands in (("context", pools.contexts), ("tool", pools.tools)):
        column = np.asarray([float(judge[c.resource_id]) for c in cands], dtype=float)
        out[lane] = np.hstack([cached.unary[lane], column.reshape(-1, 1)])
    return out


def candidate_labels(task: BenchmarkTask, pools: CandidatePools) -> dict[str, np.ndarray]:
    """Gold labels (1 = gold) per lane, aligned with ``unary_features`` rows.

    Training only: reads the task's gold ids, which no feature may see.
    """
    gold = {*task.gold_context_ids, *task.gold_tool_ids}
    return {lane: np.asarray([1 if c.resource_id in gold else 0 for c in cands], dtype=int)
            for lane, cands in (("context", pools.contexts), ("tool", pools.tools))}


@dataclass(frozen=True)
class PairPrior:
    """Training co-occurrence of tool ids with gold contexts: for each tool id, (times it
    was gold in a task with a gold context, times it was in a pool with a gold context).
    ``rate(tool_id)`` is the smoothed rate (k + 0.5) / (n + 1) (Jeffreys prior)."""

    counts: Mapping[str, tuple[int, int]]

    def rate(self, tool_id: str) -> float:
        k, n = self.counts.get(tool_id, (0, 0))
        return (k + 0.5) / (n + 1)


def _logit(p: float) -> float:
    p = min(max(p, 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))


def pair_matrix(features: ViewFeatures, p_unary: Mapping[str, float],
                prior: PairPrior) -> np.ndarray:
    """The pair feature matrix (n_contexts * n_tools, ``len(PAIR_FEATURES)``) of cached
    ``features``, rows in ``features.pair_keys`` order; ``p_unary``: resource id ->
    calibrated p(gold). Logits and rates are computed per candidate with Python floats, as
    a row at a time would, then broadcast: the values equal the row-wise ones exactly."""
    n_c, n_t = len(features.contexts), len(features.tools)
    out = np.empty((n_c, n_t, len(PAIR_FEATURES)))
    out[:, :, 0] = np.asarray([_logit(p_unary[c.id]) for c in features.contexts],
                              dtype=float).reshape(n_c, 1)
    out[:, :, 1] = np.asarray([_logit(p_unary[t.id]) for t in features.tools],
                              dtype=float).reshape(1, n_t)
    out[:, :, 2:5] = features.pair_static
    out[:, :, 5] = np.asarray([prior.rate(t.id) for t in features.tools],
                              dtype=float).reshape(1, n_t)
    out[:, :, 6] = features.pair_named
    return out.reshape(n_c * n_t, len(PAIR_FEATURES))


def pair_features(view: RouterView, pools: CandidatePools, p_unary: Mapping[str, float],
                  prior: PairPrior) -> tuple[list[tuple[str, str]], np.ndarray]:
    """Pairs (context id, tool id) of the pools in rank order, and their feature matrix
    (n_pairs, ``len(PAIR_FEATURES)``); ``p_unary``: resource id -> calibrated p(gold)."""
    features = view_features(view, pools)
    return list(features.pair_keys), pair_matrix(features, p_unary, prior)
