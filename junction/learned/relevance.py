"""Relevance per pooled candidate, from the router view only: p(gold) for both lanes.

``fit_relevance(training, pool_rule, pool_limit=..., seed=..., **options)`` fits, on the
training tasks only (their labels by ``junction.learned.features.candidate_labels``), a
``RelevanceModel``; ``RelevanceModel.score(view, pools)`` gives ``LaneScores``: p(gold) in
[0, 1] for every pooled context and tool. ``score`` reads a ``RouterView`` and its pools
only (a ``BenchmarkTask`` is refused, as ``junction.learned.features`` refuses it), so
gold, verifier and metadata cannot reach a score. The fit takes seconds: it solves no
selection.

The stages (``RelevanceConfig``; each optional part is an option of ``fit_relevance``):

1. A lane model per lane on ``UNARY_FEATURES`` (``junction.learned.features``), plus the
   optional feature groups (``FEATURE_GROUPS``):

   - ``dense``: ``dense_features``: the MaxP cosine of the objective against the
     candidate's lane text (``junction.dense``; the pinned embedder, vectors cached per
     process and on disk), its share of the lane's best, its rank among the pooled
     candidates by cosine, and the reciprocal-rank fusion of that rank with the pool's own
     rank (``junction.candidates.RRF_K``), the hybrid score computed over the pool;
   - ``prior``: how often the resource id was gold across the training tasks that held it
     (``(k + 0.5) / (n + 1)``, Jeffreys), and log(1 + k): a resource that recurs as gold;
   - ``knn``: what the objective's words say about the resource across the training
     tasks: the ``knn_neighbours`` training objectives nearest to this one (cosine of
     TF-IDF vectors over ``junction.text.lexical_tokens``, sublinear tf, fitted on the
     training objectives), and the similarity-weighted share of them where the resource
     was gold (``knn_mean``) and the best similarity among those where it was
     (``knn_best``);
   - ``link``: ``junction.learned.features.LINK_FEATURES`` (the other lane's pool score
     along the naming links).

   On a training row, ``prior`` and ``knn`` leave the row's own task out (its gold would
   otherwise be its own feature); at scoring time every training task counts.
   ``learner``: ``logistic`` (``junction.learned.model.fit_probability_model``: scaled,
   L2 logistic, Platt-calibrated: the lane models the learned strategies fit, so the
   default configuration's p is theirs), ``plain`` (the same scaled L2 logistic model
   without the Platt step: one fit instead of six) or ``boosted`` (scikit-learn's
   ``HistGradientBoostingClassifier`` on log loss, ``BOOSTED_PARAMS``). scikit-learn runs
   on one thread here.
   ``target``: the label of a context row: ``gold`` (``candidate_labels``: a gold
   context) or ``needed`` (``needed_labels``: a context of one of the task's gold pairs,
   the document that makes a gold tool usable; on a task without gold pairs, a gold
   context). Tools are labelled gold under both.

2. ``propagate``: relevance along the naming links (a context names a tool when its content
   holds the tool id as a whole identifier, ``junction.text.names_id``; read from the
   view's text, never from gold). With p the first stage's probabilities, a context's link
   row is (logit p, the best p among the pooled tools it names, their noisy-or
   1 − Π(1 − p), log(1 + how many)) and a tool's the same over the pooled contexts naming
   it (``PROPAGATION_FEATURES``; all 0 but the logit where nothing is named, as on a suite
   whose documents name no tool).

   - ``none``: the first stage's p;
   - ``fixed``: p ← (p + best linked p) / 2, with no linked candidate p ← p / 2 (a document
     that names no likely tool ranks below one that does);
   - ``stacked``: a second model per lane (``plain`` logistic) on the link rows, fitted on
     training rows whose first-stage p is out of fold (the training tasks dealt into
     ``STACK_FOLDS`` inner folds by ``junction.learned.crossfit.fold_assignment``; each
     fold's rows scored by a first stage fitted on the others), so the second stage learns
     how much out-of-sample p of the other lane is worth.

   ``iterations``: how many times the propagation step is applied, each from the p the
   previous one gave.

``RelevanceModel.describe()`` is the stored model as JSON values (configuration, pool rule
and limit, seed, each model's description, the training memory's sha256 and the training
task ids, library versions); ``sha256`` hashes it (``canonical_sha256``). Equal training
rows and options give an equal hash; the model pickles. Within a process, a stage fitted
on equal rows (the same configuration of that stage, pools, views and gold) is reused
(``clear_fit_cache``): the fit is deterministic, so sharing changes no result.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import math
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, TypeVar, cast

import numpy as np
from scipy.sparse import csr_matrix

from junction.candidates import (
    RRF_K,
    CandidatePools,
    PoolLimit,
    check_pool_rule,
    context_text,
    tool_text,
)
from junction.learned.crossfit import fold_assignment
from junction.learned.features import (
    LINK_FEATURES,
    UNARY_FEATURES,
    ViewFeatures,
    candidate_labels,
    view_features,
    view_fingerprint,
)
from junction.learned.model import (
    LearnedModelError,
    ProbabilityModel,
    canonical_sha256,
    fit_probability_model,
)
from junction.tasks import BenchmarkTask, RouterView
from junction.text import lexical_tokens

__all__ = [
    "BOOSTED_PARAMS",
    "DEFAULT_CONFIG",
    "DENSE_FEATURES",
    "FEATURE_GROUPS",
    "KNN_FEATURES",
    "LEARNERS",
    "PRIOR_FEATURES",
    "PROPAGATIONS",
    "PROPAGATION_FEATURES",
    "STACK_FOLDS",
    "TARGETS",
    "TODAY_CONFIG",
    "LaneScores",
    "RelevanceConfig",
    "RelevanceModel",
    "clear_dense_cache",
    "clear_fit_cache",
    "dense_features",
    "fit_relevance",
    "needed_labels",
    "relevance_config",
]

LANES = ("context", "tool")
DENSE_FEATURES = ("dense", "dense_normalised", "dense_rank", "fused")
PRIOR_FEATURES = ("prior_rate", "prior_log_count")
KNN_FEATURES = ("knn_mean", "knn_best")
PROPAGATION_FEATURES = ("logit_self", "link_best_p", "link_noisy_or", "link_count")
FEATURE_GROUPS: Mapping[str, tuple[str, ...]] = {
    "dense": DENSE_FEATURES, "prior": PRIOR_FEATURES, "knn": KNN_FEATURES,
    "link": LINK_FEATURES,
}
"""Optional first-stage feature groups and their columns (module docstring)."""
LEARNERS = ("logistic", "plain", "boosted")
TARGETS = ("gold", "needed")
PROPAGATIONS = ("none", "fixed", "stacked")
STACK_FOLDS = 3
"""Inner folds of the training tasks for the stacked stage's out-of-fold p (fewer when
there are fewer tasks; no second stage with fewer than 2)."""
BOOSTED_PARAMS: Mapping[str, Any] = {
    "loss": "log_loss", "learning_rate": 0.05, "max_iter": 200, "max_leaf_nodes": 15,
    "min_samples_leaf": 20, "l2_regularization": 1.0, "early_stopping": False,
}
"""``HistGradientBoostingClassifier`` settings of the ``boosted`` learner (fixed; no early
stopping, so the fit is deterministic for given rows and seed)."""
_EPS = 1e-6


@dataclass(frozen=True)
class LaneScores:
    """p(gold) per pooled candidate, from the router view only: ``context_p`` (pooled
    context id -> p in [0, 1]) and ``tool_p`` (pooled tool id -> p in [0, 1])."""

    context_p: Mapping[str, float]
    tool_p: Mapping[str, float]

    def lane(self, lane: str) -> Mapping[str, float]:
        """``context_p`` for ``"context"``, ``tool_p`` for ``"tool"``."""
        return self.context_p if lane == "context" else self.tool_p

    def as_dict(self) -> dict[str, float]:
        """Resource id -> p over both lanes (ids are unique across lanes in a task)."""
        return {**self.context_p, **self.tool_p}


@dataclass(frozen=True)
class RelevanceConfig:
    """What a relevance model is made of (module docstring): ``features`` (names of
    ``FEATURE_GROUPS``, in that order), ``learner`` (``LEARNERS``), ``propagate``
    (``PROPAGATIONS``), ``iterations`` (>= 1), ``knn_neighbours`` (>= 1), ``target``
    (``TARGETS``: the context lane's label, ``needed_labels``)."""

    features: tuple[str, ...] = ()
    learner: str = "logistic"
    propagate: str = "none"
    iterations: int = 1
    knn_neighbours: int = 10
    target: str = "gold"

    def __post_init__(self) -> None:
        unknown = [f for f in self.features if f not in FEATURE_GROUPS]
        if unknown:
            raise ValueError(f"relevance features: unknown group {unknown[0]!r} "
                             f"(known: {', '.join(FEATURE_GROUPS)})")
        if self.learner not in LEARNERS:
            raise ValueError(f"relevance learner must be one of {', '.join(LEARNERS)}, "
                             f"got {self.learner!r}")
        if self.propagate not in PROPAGATIONS:
            raise ValueError(f"relevance propagate must be one of {', '.join(PROPAGATIONS)}, "
                             f"got {self.propagate!r}")
        if self.target not in TARGETS:
            raise ValueError(f"relevance target must be one of {', '.join(TARGETS)}, "
                             f"got {self.target!r}")
        if self.iterations < 1 or self.knn_neighbours < 1:
            raise ValueError("relevance iterations and knn_neighbours must be >= 1")
        object.__setattr__(self, "features",
                           tuple(f for f in FEATURE_GROUPS if f in self.features))

    def columns(self) -> tuple[str, ...]:
        """The first stage's feature names, in column order."""
        return (*UNARY_FEATURES, *(c for g in self.features for c in FEATURE_GROUPS[g]))


TODAY_CONFIG = RelevanceConfig()
"""The learned strategies' lane models alone (``logistic`` on ``UNARY_FEATURES``, no
propagation, target ``gold``): their p(gold), as a relevance model."""

DEFAULT_CONFIG = RelevanceConfig(features=("prior", "knn"), learner="plain",
                                 propagate="stacked", iterations=2, target="needed")
"""``fit_relevance``'s configuration when no option is given (an option given replaces
its field only): the one ``bench/studies/tau2_relevance.py`` chose on fold draws 0-2
(the smallest sum of both depths' median and p75; ties to fewer feature groups)."""


# ---------------------------------------------------------------------------------------
# dense features (cached per process)

_DENSE: OrderedDict[tuple, dict[str, np.ndarray]] = OrderedDict()
_DENSE_LOCK = threading.Lock()
_DENSE_CACHE_SIZE = 4096


def clear_dense_cache() -> None:
    """Forget the dense feature rows kept for the process."""
    with _DENSE_LOCK:
        _DENSE.clear()


def _dense_lane(query: str, texts: Sequence[str]) -> np.ndarray:
    from junction.dense import dense_scores  # loads PyTorch: only where dense features run

    n = len(texts)
    out = np.zeros((n, len(DENSE_FEATURES)))
    if n == 0:
        return out
    cos = np.asarray(dense_scores(query, list(texts)), dtype=float)
    best = float(cos.max())
    order = sorted(range(n), key=lambda i: (-cos[i], i))
    dense_rank = np.empty(n)
    dense_rank[order] = np.arange(n, dtype=float)
    out[:, 0] = cos
    out[:, 1] = cos / best if best > 0 else 0.0
    out[:, 2] = dense_rank
    # pool rank = row order (candidates arrive in the pool's rank order)
    out[:, 3] = (1.0 / (RRF_K + np.arange(n) + 1)
                 + np.where(cos > 0, 1.0 / (RRF_K + dense_rank + 1), 0.0))
    return out


def dense_features(view: RouterView, pools: CandidatePools,
                   features: ViewFeatures | None = None) -> dict[str, np.ndarray]:
    """``{"context": (n_contexts, 4), "tool": (n_tools, 4)}``, columns ``DENSE_FEATURES``,
    rows in the pools' rank order: the MaxP cosine of the objective against the
    candidate's ``context_text`` / ``tool_text`` (0 where it is not positive), that over
    the lane's best (0 if the best is 0), the 0-based rank among the pooled candidates by
    cosine (ties by pool order), and the fused score 1 / (``RRF_K`` + pool rank + 1) +
    1 / (``RRF_K`` + cosine rank + 1) (the second term 0 when the cosine is 0). Cached for
    the process per (view fingerprint, pool ids). Raises ``junction.dense.DenseError``
    when the embedder is missing or off its pin, ``TypeError`` for anything but a
    ``RouterView``."""
    if not isinstance(view, RouterView):
        raise TypeError(f"relevance reads a RouterView only, not {type(view).__name__}")
    f = view_features(view, pools) if features is None else features
    key = (view_fingerprint(view), f.context_ids, f.tool_ids)
    with _DENSE_LOCK:
        hit = _DENSE.get(key)
        if hit is not None:
            _DENSE.move_to_end(key)
            return hit
    out = {"context": _dense_lane(view.objective, [context_text(c) for c in f.contexts]),
           "tool": _dense_lane(view.objective, [tool_text(t) for t in f.tools])}
    for a in out.values():
        a.setflags(write=False)
    with _DENSE_LOCK:
        _DENSE[key] = out
        while len(_DENSE) > _DENSE_CACHE_SIZE:
            _DENSE.popitem(last=False)
    return out


# ---------------------------------------------------------------------------------------
# the training memory: prior and nearest training objectives

@functools.lru_cache(maxsize=8192)
def _terms(text: str) -> tuple[str, ...]:
    return tuple(lexical_tokens(text))


@dataclass(frozen=True)
class _Memory:
    """The training tasks' objectives (TF-IDF, fitted on them) and gold ids."""

    task_ids: tuple[str, ...]
    gold: tuple[frozenset[str], ...]
    held: dict[str, int]           # resource id -> training tasks that held it
    gold_count: dict[str, int]     # resource id -> training tasks where it was gold
    vocabulary: dict[str, int]
    idf: np.ndarray
    matrix: csr_matrix             # (n_tasks, vocabulary), unit rows

    @classmethod
    def build(cls, tasks: Sequence[BenchmarkTask]) -> _Memory:
        gold = tuple(frozenset({*t.gold_context_ids, *t.gold_tool_ids}) for t in tasks)
        held: dict[str, int] = {}
        count: dict[str, int] = {}
        for t, g in zip(tasks, gold, strict=True):
            for rid in (*(c.id for c in t.contexts), *(x.id for x in t.tools)):
                held[rid] = held.get(rid, 0) + 1
            for rid in g:
                count[rid] = count.get(rid, 0) + 1
        docs = [_terms(t.objective) for t in tasks]
        vocabulary = {w: i for i, w in enumerate(sorted({w for d in docs for w in d}))}
        df = np.zeros(len(vocabulary))
        for d in docs:
            for w in set(d):
                df[vocabulary[w]] += 1
        n = len(docs)
        idf = np.log((1 + n) / (1 + df)) + 1.0  # scikit-learn's smooth idf

        memory = cls(tuple(t.task_id for t in tasks), gold, held, count, vocabulary, idf,
                     csr_matrix((n, len(vocabulary))))  # filled below: vector() needs idf
        data: list[float] = []
        indices: list[int] = []
        indptr = [0]
        for t in tasks:
            v = memory.vector(t.objective)
            nz = np.flatnonzero(v)
            indices += nz.tolist()
            data += v[nz].tolist()
            indptr.append(len(indices))
        matrix = csr_matrix((np.asarray(data, dtype=float), np.asarray(indices, dtype=np.int64),
                             np.asarray(indptr, dtype=np.int64)), shape=(n, len(vocabulary)))
        object.__setattr__(memory, "matrix", matrix)
        return memory

    def vector(self, text: str) -> np.ndarray:
        """The unit TF-IDF vector of ``text`` (sublinear tf; unknown words dropped)."""
        v = np.zeros(len(self.vocabulary))
        counts: dict[int, int] = {}
        for w in _terms(text):
            i = self.vocabulary.get(w)
            if i is not None:
                counts[i] = counts.get(i, 0) + 1
        for i, c in counts.items():
            v[i] = (1.0 + math.log(c)) * self.idf[i]
        norm = float(np.linalg.norm(v))
        return v / norm if norm > 0 else v

    def sha256(self) -> str:
        h = hashlib.sha256()
        for tid, g in zip(self.task_ids, self.gold, strict=True):
            h.update(tid.encode())
            h.update(b"\0")
            h.update("\0".join(sorted(g)).encode())
            h.update(b"\1")
        for part in (self.matrix.data, self.matrix.indices, self.matrix.indptr):
            h.update(np.ascontiguousarray(part).tobytes())
        return h.hexdigest()

    def prior_rows(self, ids: Sequence[str], exclude: int | None) -> np.ndarray:
        out = np.zeros((len(ids), len(PRIOR_FEATURES)))
        for i, rid in enumerate(ids):
            k, n = self.gold_count.get(rid, 0), self.held.get(rid, 0)
            if exclude is not None:
                k -= rid in self.gold[exclude]
                n -= 1 if n > 0 else 0
            out[i] = ((k + 0.5) / (n + 1), math.log1p(k))
        return out

    def neighbours(self, objective: str, k: int,
                   exclude: int | None) -> list[tuple[int, float]]:
        """(training index, cosine) of the ``k`` nearest training objectives (positive
        cosine only; ties by index), the ``exclude``-th left out."""
        if not len(self.task_ids):
            return []
        sims = np.asarray(self.matrix @ self.vector(objective), dtype=float).ravel()
        if exclude is not None:
            sims[exclude] = 0.0
        order = [int(i) for i in np.lexsort((np.arange(len(sims)), -sims))[:k]]
        return [(i, float(sims[i])) for i in order if sims[i] > 0]

    def knn_rows(self, ids: Sequence[str], near: Sequence[tuple[int, float]]) -> np.ndarray:
        out = np.zeros((len(ids), len(KNN_FEATURES)))
        total = sum(s for _, s in near)
        if total <= 0:
            return out
        for r, rid in enumerate(ids):
            hit = [s for j, s in near if rid in self.gold[j]]
            if hit:
                out[r] = (sum(hit) / total, max(hit))
        return out


# ---------------------------------------------------------------------------------------
# models

@dataclass(frozen=True)
class _Fitted:
    """A ``plain`` (scaled L2 logistic, no Platt step) or ``boosted``
    (``HistGradientBoostingClassifier``) lane model, or a constant where a class has fewer
    than 2 rows. scikit-learn runs on one thread (``threadpoolctl``): the same trees and
    coefficients on any machine, and no oversubscribed cores."""

    learner: str
    features: tuple[str, ...]
    n_rows: int
    n_positive: int
    estimator: Any
    constant: float | None = None

    def predict(self, X: np.ndarray) -> np.ndarray:
        """p(label = 1) per row of ``X`` (n_rows, n_features)."""
        X = np.asarray(X, dtype=float)
        if X.ndim != 2 or X.shape[1] != len(self.features):
            raise LearnedModelError(f"feature matrix has shape {X.shape}; the model expects "
                                    f"{len(self.features)} columns")
        if self.estimator is None:
            return np.full(X.shape[0], float(self.constant or 0.0))
        if X.shape[0] == 0:
            return np.zeros(0)
        from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]

        with threadpool_limits(limits=1):
            return np.asarray(self.estimator.predict_proba(X)[:, 1], dtype=float)

    def describe(self) -> dict[str, Any]:
        """The model as JSON values: learner, features, row counts, and the coefficients
        (``plain``) or the trees' sha256 (``boosted``)."""
        out: dict[str, Any] = {"learner": self.learner, "features": list(self.features),
                               "n_rows": self.n_rows, "n_positive": self.n_positive}
        if self.estimator is None:
            out["constant"] = self.constant
            return out
        if self.learner == "plain":
            scaler, logistic = self.estimator.steps[0][1], self.estimator.steps[1][1]
            out.update(scaler_mean=[float(v) for v in scaler.mean_],
                       scaler_scale=[float(v) for v in scaler.scale_],
                       coefficients=[float(v) for v in logistic.coef_[0]],
                       intercept=float(logistic.intercept_[0]))
            return out
        h = hashlib.sha256()
        for trees in self.estimator._predictors:
            for tree in trees:
                h.update(np.ascontiguousarray(tree.nodes).tobytes())
        out.update(params=dict(BOOSTED_PARAMS), trees_sha256=h.hexdigest(),
                   baseline=float(np.ravel(self.estimator._baseline_prediction)[0]))
        return out


def _fit_fitted(X: np.ndarray, y: np.ndarray, names: Sequence[str], learner: str,
                seed: int) -> _Fitted:
    n, k = int(X.shape[0]), int(y.sum())
    if min(k, n - k) < 2:
        return _Fitted(learner, tuple(names), n, k, None, (k + 0.5) / (n + 1))
    from threadpoolctl import threadpool_limits

    if learner == "boosted":
        from sklearn.ensemble import HistGradientBoostingClassifier

        model = HistGradientBoostingClassifier(**BOOSTED_PARAMS, random_state=seed)
    else:
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        model = make_pipeline(StandardScaler(),
                              LogisticRegression(C=1.0, max_iter=5000, random_state=seed))
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        model.fit(X, y)
    return _Fitted(learner, tuple(names), n, k, model)


def _fit_lane(X: np.ndarray, y: np.ndarray, names: Sequence[str], learner: str,
              seed: int) -> ProbabilityModel | _Fitted:
    if learner == "logistic":
        return fit_probability_model(X, y, names, seed)
    return _fit_fitted(X, y, names, learner, seed)


def _logit(p: float) -> float:
    p = min(max(p, _EPS), 1 - _EPS)
    return math.log(p / (1 - p))


def _propagation_rows(named: np.ndarray, p_self: np.ndarray,
                      p_other: np.ndarray) -> np.ndarray:
    """``PROPAGATION_FEATURES`` per row of ``named`` (rows: this lane's pooled candidates;
    columns: the other lane's, 1.0 where the two are linked by a name)."""
    out = np.zeros((named.shape[0], len(PROPAGATION_FEATURES)))
    for i in range(named.shape[0]):
        out[i, 0] = _logit(float(p_self[i]))
        hit = named[i] > 0
        if hit.any():
            linked = p_other[hit]
            out[i, 1] = float(linked.max())
            out[i, 2] = 1.0 - float(np.prod(1.0 - linked))
            out[i, 3] = math.log1p(int(hit.sum()))
    return out


def _linked_best(named: np.ndarray, p_other: np.ndarray) -> np.ndarray:
    out = np.zeros(named.shape[0])
    for i in range(named.shape[0]):
        hit = named[i] > 0
        if hit.any():
            out[i] = float(p_other[hit].max())
    return out


@dataclass(frozen=True)
class _Prepared:
    """One task's router view, pools and model-free features (training or scoring)."""

    view: RouterView
    pools: CandidatePools
    features: ViewFeatures


@dataclass(frozen=True)
class RelevanceModel:
    """A fitted relevance model (module docstring): frozen, picklable; ``score`` gives
    ``LaneScores``; ``describe`` / ``sha256`` are its stored record."""

    config: RelevanceConfig
    pool_rule: str
    pool_limit: PoolLimit
    seed: int
    first: Mapping[str, ProbabilityModel | _Fitted]
    second: Mapping[str, _Fitted] | None
    memory: _Memory | None
    training_ids: tuple[str, ...]
    _sha: list[str] = field(default_factory=list, compare=False, repr=False)

    # -- features -------------------------------------------------------------------
    def _first_rows(self, item: _Prepared, exclude: int | None) -> dict[str, np.ndarray]:
        return _first_rows(self.config, self.memory, item, exclude)

    def _first_p(self, item: _Prepared, exclude: int | None = None) -> dict[str, np.ndarray]:
        rows = self._first_rows(item, exclude)
        return {lane: self.first[lane].predict(rows[lane]) for lane in LANES}

    def _propagated(self, item: _Prepared, p: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return _propagate(self.config, self.second, item.features, p)

    def score(self, view: RouterView, pools: CandidatePools) -> LaneScores:
        """p(gold) per pooled candidate of ``pools`` (the pools of ``view`` by this model's
        pool rule and limit, as ``junction.candidates.candidate_pools`` gives them).
        Raises ``TypeError`` for anything but a ``RouterView``, ``KeyError`` naming a
        pooled id the view does not hold, ``junction.dense.DenseError`` when a dense
        model's embedder is missing."""
        if not isinstance(view, RouterView):
            raise TypeError(f"relevance reads a RouterView only, not {type(view).__name__} "
                            "(BenchmarkTask.router_view() drops gold, verifier and metadata)")
        item = _Prepared(view, pools, view_features(view, pools))
        p = self._propagated(item, self._first_p(item))
        f = item.features
        return LaneScores(
            context_p={c: float(v) for c, v in zip(f.context_ids, p["context"], strict=True)},
            tool_p={t: float(v) for t, v in zip(f.tool_ids, p["tool"], strict=True)})

    def describe(self) -> dict[str, Any]:
        """The stored model as JSON values (module docstring)."""
        limit = list(self.pool_limit) if isinstance(self.pool_limit, (tuple, list)) \
            else self.pool_limit
        return {
            "kind": "relevance", "config": {**asdict(self.config),
                                            "features": list(self.config.features)},
            "pool_rule": self.pool_rule, "pool_limit": limit, "seed": self.seed,
            "first": {lane: self.first[lane].describe() for lane in LANES},
            "second": None if self.second is None
            else {lane: self.second[lane].describe() for lane in LANES},
            "memory_sha256": None if self.memory is None else self.memory.sha256(),
            "training": {"n_tasks": len(self.training_ids),
                         "task_ids": list(self.training_ids)},
            "versions": {p: importlib.metadata.version(p) for p in ("scikit-learn", "numpy")},
        }

    @property
    def sha256(self) -> str:
        """sha256 of ``describe()`` (canonical JSON; computed once)."""
        if not self._sha:
            self._sha.append(canonical_sha256(self.describe()))
        return self._sha[0]


def _first_rows(config: RelevanceConfig, memory: _Memory | None, item: _Prepared,
                exclude: int | None) -> dict[str, np.ndarray]:
    """The first stage's feature rows per lane (``config.columns()``)."""
    f = item.features
    blocks: dict[str, list[np.ndarray]] = {lane: [f.unary[lane]] for lane in LANES}
    ids = {"context": f.context_ids, "tool": f.tool_ids}
    dense = dense_features(item.view, item.pools, f) if "dense" in config.features else None
    near = (memory.neighbours(item.view.objective, config.knn_neighbours, exclude)
            if memory is not None and "knn" in config.features else [])
    for group in config.features:
        for lane in LANES:
            if group == "dense":
                assert dense is not None
                blocks[lane].append(dense[lane])
            elif group == "prior":
                assert memory is not None
                blocks[lane].append(memory.prior_rows(ids[lane], exclude))
            elif group == "knn":
                assert memory is not None
                blocks[lane].append(memory.knn_rows(ids[lane], near))
            else:
                blocks[lane].append(f.link[lane])
    width = len(config.columns())
    return {lane: np.hstack(blocks[lane]).reshape(-1, width) for lane in LANES}


def _propagate(config: RelevanceConfig, second: Mapping[str, _Fitted] | None,
               features: ViewFeatures, p: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    if config.propagate == "none":
        return p
    named = {"context": features.pair_named, "tool": features.pair_named.T}
    other = {"context": "tool", "tool": "context"}
    for _ in range(config.iterations):
        if config.propagate == "fixed":
            p = {lane: (p[lane] + _linked_best(named[lane], p[other[lane]])) / 2.0
                 for lane in LANES}
        elif second is not None:
            p = {lane: second[lane].predict(_propagation_rows(named[lane], p[lane],
                                                              p[other[lane]]))
                 for lane in LANES}
    return p


def _prepare(task: BenchmarkTask, pool_limit: PoolLimit, rule: str) -> _Prepared:
    from junction.learned.utility import training_view  # the fit's shared pool cache

    view, pools, features = training_view(task, pool_limit, rule)
    return _Prepared(view, pools, features)


def needed_labels(task: BenchmarkTask, pools: CandidatePools) -> dict[str, np.ndarray]:
    """Labels of the ``needed`` target, aligned with the pools (training only: reads gold):
    a tool is needed when it is gold; a context when it is the context of one of the
    task's gold pairs (the document that makes a gold tool usable), or, on a task without
    gold pairs, when it is gold."""
    pairs = {g.context_id for g in task.gold_pairs}
    contexts = pairs if pairs else set(task.gold_context_ids)
    tools = set(task.gold_tool_ids)
    return {"context": np.asarray([int(c.resource_id in contexts) for c in pools.contexts],
                                  dtype=int),
            "tool": np.asarray([int(c.resource_id in tools) for c in pools.tools], dtype=int)}


T = TypeVar("T")
_MEMO: OrderedDict[tuple, object] = OrderedDict()
_MEMO_LOCK = threading.Lock()
_MEMO_SIZE = 256


def _memo(key: tuple, make: Callable[[], T]) -> T:
    """``make()`` once per ``key`` in the process (the ``_MEMO_SIZE`` most recent kept):
    a fit is a function of its key, so sharing it changes no result, only the time."""
    with _MEMO_LOCK:
        if key in _MEMO:
            _MEMO.move_to_end(key)
            return cast(T, _MEMO[key])
    value = make()
    with _MEMO_LOCK:
        _MEMO[key] = value
        while len(_MEMO) > _MEMO_SIZE:
            _MEMO.popitem(last=False)
    return value


def clear_fit_cache() -> None:
    """Forget the first- and second-stage fits kept for the process."""
    with _MEMO_LOCK:
        _MEMO.clear()


def _task_key(task: BenchmarkTask, item: _Prepared) -> tuple:
    """What a fit reads of one training task: its view (fingerprint), pools and gold."""
    return (task.task_id, view_fingerprint(item.view),
            tuple(c.resource_id for c in item.pools.contexts),
            tuple(c.resource_id for c in item.pools.tools), tuple(task.gold_context_ids),
            tuple(task.gold_tool_ids),
            tuple((g.context_id, g.tool_id) for g in task.gold_pairs))


def _fit_first(config: RelevanceConfig, memory: _Memory | None,
               items: Sequence[_Prepared], labels: Sequence[Mapping[str, np.ndarray]],
               indices: Sequence[int], seed: int) -> dict[str, ProbabilityModel | _Fitted]:
    """The first-stage lane models on the training items ``indices`` (their own task left
    out of ``prior`` / ``knn``: index ``i`` of the memory)."""
    names = config.columns()
    rows = {i: _first_rows(config, memory, items[i], i) for i in indices}
    out: dict[str, ProbabilityModel | _Fitted] = {}
    for lane in LANES:
        X = np.vstack([rows[i][lane] for i in indices] or [np.zeros((0, len(names)))])
        y = np.concatenate([labels[i][lane] for i in indices] or [np.zeros(0, dtype=int)])
        out[lane] = _fit_lane(X, y, names, config.learner, seed)
    return out


def _fit_second(config: RelevanceConfig, memory: _Memory | None,
                items: Sequence[_Prepared], labels: Sequence[Mapping[str, np.ndarray]],
                ids: Sequence[str], seed: int, first_key: tuple,
                ) -> dict[str, _Fitted]:
    """The stacked stage's lane models on out-of-fold first-stage p (module docstring)."""
    every = list(range(len(items)))
    folds = min(STACK_FOLDS, len(ids))
    assignment = fold_assignment(ids, folds, repetition=seed)
    oof: list[dict[str, np.ndarray]] = [{} for _ in items]
    for k in range(folds):
        inner = [i for i in every if assignment[ids[i]] != k]
        held = [i for i in every if assignment[ids[i]] == k]
        models = _memo((*first_key, "inner", folds, k),
                       functools.partial(_fit_first, config, memory, items, labels, inner,
                                         seed))
        for i in held:
            rows = _first_rows(config, memory, items[i], i)
            oof[i] = {lane: models[lane].predict(rows[lane]) for lane in LANES}
    second: dict[str, _Fitted] = {}
    other = {"context": "tool", "tool": "context"}
    for lane in LANES:
        blocks = []
        for i in every:
            named = items[i].features.pair_named
            blocks.append(_propagation_rows(named if lane == "context" else named.T,
                                            oof[i][lane], oof[i][other[lane]]))
        X = np.vstack(blocks)
        y = np.concatenate([labels[i][lane] for i in every])
        second[lane] = _fit_fitted(X, y, PROPAGATION_FEATURES, "plain", seed)
    return second


def relevance_config(options: Mapping[str, object]) -> RelevanceConfig:
    """``DEFAULT_CONFIG`` with ``options`` (fields of ``RelevanceConfig``; ``features`` any
    sequence of names) in place of its values. Raises ``ValueError`` for an unknown option
    or value (``RelevanceConfig``'s own checks)."""
    unknown = sorted(set(options) - set(RelevanceConfig.__dataclass_fields__))
    if unknown:
        raise ValueError(f"fit_relevance: unknown option {unknown[0]!r} (known: "
                         f"{', '.join(RelevanceConfig.__dataclass_fields__)})")
    given: dict[str, Any] = dict(options)
    if "features" in given:
        given["features"] = tuple(given["features"])
    return RelevanceConfig(**{**asdict(DEFAULT_CONFIG), **given})


def fit_relevance(training: Sequence[BenchmarkTask], pool_rule: str, *,
                  pool_limit: PoolLimit = None, seed: int = 0,
                  config: RelevanceConfig | None = None, **options: Any) -> RelevanceModel:
    """Fit a ``RelevanceModel`` on ``training`` (module docstring): its pools by
    ``pool_rule`` (``junction.candidates.POOL_RULES``) and ``pool_limit`` (as the strategy's
    run asks for them; scoring pools should be made the same way), labels by
    ``candidate_labels`` (target ``gold``) or ``needed_labels`` (``needed``). ``config``, or
    ``options`` (the fields of ``RelevanceConfig``: ``features``, ``learner``,
    ``propagate``, ``iterations``, ``knn_neighbours``, ``target``), say what it is made
    of; neither: ``DEFAULT_CONFIG``. Deterministic for equal arguments; a stage fitted on
    equal rows earlier in the process is reused (``clear_fit_cache``).

    Raises ``LearnedModelError`` when ``training`` is empty, ``UnknownNameError`` for an
    unknown pool rule, ``ValueError`` for an unknown option or value, and
    ``junction.dense.DenseError`` when dense features are asked for and the embedder is
    missing."""
    rule = check_pool_rule(pool_rule)
    if config is None:
        config = relevance_config(options)
    elif options:
        raise ValueError("fit_relevance: give config or options, not both")
    if not training:
        raise LearnedModelError("fit_relevance: no training tasks")
    items = [_prepare(t, pool_limit, rule) for t in training]
    label_of = needed_labels if config.target == "needed" else candidate_labels
    labels = [label_of(t, it.pools) for t, it in zip(training, items, strict=True)]
    needs_memory = bool({"prior", "knn"} & set(config.features))
    memory = _Memory.build(training) if needs_memory else None
    limit_key = tuple(pool_limit) if isinstance(pool_limit, (tuple, list)) else pool_limit
    first_key = ("relevance", config.features, config.learner, config.knn_neighbours,
                 config.target, seed, rule, limit_key,
                 tuple(_task_key(t, it) for t, it in zip(training, items, strict=True)))
    every = list(range(len(items)))
    first = _memo((*first_key, "first"),
                  functools.partial(_fit_first, config, memory, items, labels, every, seed))
    second: dict[str, _Fitted] | None = None
    ids = [t.task_id for t in training]
    if config.propagate == "stacked" and len(set(ids)) >= 2 and len(ids) == len(set(ids)):
        second = _memo((*first_key, "second", STACK_FOLDS),
                       functools.partial(_fit_second, config, memory, items, labels, ids,
                                         seed, first_key))
    elif config.propagate == "stacked":
        config = replace(config, propagate="none", iterations=1)
    return RelevanceModel(config, rule, pool_limit, seed, first, second, memory, tuple(ids))
