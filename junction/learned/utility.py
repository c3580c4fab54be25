"""Learned unary utilities and interactions for one suite family, fitted on training tasks.

``fit_learned_utility(family, tasks, pool_limit)`` fits, on the training tasks only:

1. a relevance model per lane (``junction.learned.model``): p(gold | unary features of the
   candidate, ``junction.learned.features``);
2. where training has gold context-tool pairs (a task with both a gold context and a gold
   tool), a pair model p(both gold | pair features) (on a task with ``gold_pairs``, the
   label is membership of those pairs: tau2-banking); its output minus the independent
   estimate p(c)·p(t) is the learned interaction w(c, t), kept only where |w| is at least
   the threshold ``tau`` (sparse by construction). Without such pairs there is no pair
   model and no interaction (the BFCL suites: their gold names contexts or tools, never
   both in one task);
3. the price of a visible token ``lam``: unary utility is the expected value
   u(r) = p(gold | r) − lam · tokens(r) / budget tokens, so a candidate worth less than its
   context cost is left out, and a task where nothing is likely relevant exposes nothing.
   ``lam`` (from ``LAMBDA_GRID``) and ``tau`` (from ``TAU_GRID``) maximise the training
   success of the exact joint selector under these utilities, averaged per suite so every
   suite of the family weighs the same (the verifier of each training task: training rows
   may use their gold; ties keep the smaller value, i.e. more exposure).

The fitted ``LearnedUtility`` turns a router view and its pools into a ``JointProblem``
(``problem``); ``record()`` is the stored model (JSON): family, pool limit, seed, each
model's description, lam, tau, the search table, training task ids and counts, and the
versions; ``sha256`` hashes it (``canonical_sha256``).

Cost. What does not depend on the training set is computed once per process and shared by
every fit (cross-fitting refits a family once per fold): each task's BM25 pools (keyed on
``features.view_fingerprint`` and the pool limit) and its model-free features
(``features.view_features``). Per fit, p(gold) and the pair model's w(c, t) are computed
once per training task, not once per grid point; per (tau, task) the kept pairs, per
(lam, task) the unaries. A grid point's problem whose reduced problem (``junction.select.
exact.reduction.reduce``: the candidates that can be selected, their unaries and pairs)
equals one already solved for the same task reuses that verified outcome: the exact
selector's answer is a function of the reduced problem, the budget and the size cap. The
fitted model (its ``sha256``) is the same as when every grid point is solved afresh.
"""

from __future__ import annotations

import importlib.metadata
import math
import threading
from collections import Counter, OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from junction.agent.execution import execute
from junction.candidates import (
    DEFAULT_POOL_RULE,
    CandidatePools,
    PoolLimit,
    candidate_pools,
)
from junction.learned.features import (
    LINK_FEATURES,
    PAIR_FEATURES,
    UNARY_FEATURES,
    PairPrior,
    ViewFeatures,
    cached_view_features,
    candidate_labels,
    pair_matrix,
    view_features,
    view_fingerprint,
)
from junction.learned.grid import (
    OPTIMAL_SEARCH,
    Variant,
    check_search,
    fit_workers,
    solve_all,
)
from junction.learned.model import (
    LearnedModelError,
    ProbabilityModel,
    canonical_sha256,
    fit_probability_model,
)
from junction.resources import ContextResource, ToolResource
from junction.select import JointProblem
from junction.select.exact.auto import AUTO_COMBINATORIAL_MAX
from junction.tasks import BenchmarkTask, RouterView
from junction.verifiers import verify

__all__ = [
    "LAMBDA_GRID",
    "POOL_CACHE_SIZE",
    "SPREAD_MIN_PROBLEMS",
    "TAU_GRID",
    "LearnedUtility",
    "clear_pool_cache",
    "fit_learned_utility",
    "training_view",
]

LAMBDA_GRID = (0.0, 0.1, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0)
"""Token prices tried on training (unitless: utility per budget's worth of tokens). At 1.0 a
schema that costs a fifth of the budget must have p(gold) > 0.2 to be exposed."""

TAU_GRID: tuple[float, ...] = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2)
"""Interaction thresholds |w| tried on training when a pair model exists, smallest first (a
tie keeps the smaller, i.e. more pairs). The grid reaches below 0.02 to 0.005, so that a
fit choosing its smallest value would show that a smaller threshold does better."""

SPREAD_MIN_PROBLEMS = 200
"""A fit with ``workers=None`` runs its search on worker processes only when at least this
many grid-point problems have pools larger than ``AUTO_COMBINATORIAL_MAX`` (the ones the
branch and cut may get); smaller searches (BFCL's pools of 8 per lane, test fixtures) take
less time than starting the worker processes."""

POOL_CACHE_SIZE = 4096
"""Training views whose BM25 pools the fit keeps for the process (least recently used
dropped first)."""


@dataclass
class LearnedUtility:
    """A fitted family model: lane models, optional pair model, lam and tau."""

    family: str
    pool_limit: PoolLimit
    seed: int
    lanes: dict[str, ProbabilityModel]
    pair: ProbabilityModel | None
    prior: PairPrior
    lam: float = 0.0
    tau: float = math.inf
    search: list[dict[str, Any]] = field(default_factory=list)
    training: dict[str, Any] = field(default_factory=dict)
    pool_rule: str = DEFAULT_POOL_RULE
    """The pool rule the model was fitted on (``junction.candidates.POOL_RULES``)."""
    link: bool = False
    """Whether the lane models read ``LINK_FEATURES`` after ``UNARY_FEATURES``."""
    pair_weight: float = 1.0
    """The factor every kept interaction is multiplied by (chosen with lam and tau when the
    fit is given a ``pair_weights`` grid; 1.0 otherwise)."""
    grids: dict[str, Any] | None = None
    """The grids searched, where not the defaults (``fit_learned_utility``)."""
    grid_search: str = OPTIMAL_SEARCH
    """How the λ × τ search selected each grid-point problem (``grid.SEARCHES``)."""

    def _lane_matrix(self, features: ViewFeatures, lane: str) -> np.ndarray:
        """The lane's feature rows the lane model reads (``lane_matrix``)."""
        return lane_matrix(features, lane, self.link)

    def probabilities(self, view: RouterView, pools: CandidatePools) -> dict[str, float]:
        """Resource id -> calibrated p(gold) for every candidate of the pools."""
        return self._probabilities(view_features(view, pools))

    def _probabilities(self, features: ViewFeatures) -> dict[str, float]:
        out: dict[str, float] = {}
        lanes: tuple[tuple[str, Sequence[ContextResource | ToolResource]], ...] = (
            ("context", features.contexts), ("tool", features.tools))
        for lane, resources in lanes:
            predicted = self.lanes[lane].predict(self._lane_matrix(features, lane))
            for r, p in zip(resources, predicted, strict=True):
                out[r.id] = float(p)
        return out

    def _pair_weights(self, features: ViewFeatures, p: Mapping[str, float]) -> np.ndarray:
        """w(c, t) = p(pair) − p(c)·p(t), shape (n_contexts, n_tools), unrounded (the pair
        model must exist and both pools be non-empty)."""
        assert self.pair is not None
        n_c, n_t = len(features.contexts), len(features.tools)
        p_pair = self.pair.predict(pair_matrix(features, p, self.prior)).reshape(n_c, n_t)
        p_c = np.asarray([p[c.id] for c in features.contexts], dtype=float)
        p_t = np.asarray([p[t.id] for t in features.tools], dtype=float)
        # the same IEEE operations as float(p_pair) - p[c] * p[t] one pair at a time
        return p_pair - p_c.reshape(n_c, 1) * p_t.reshape(1, n_t)

    @staticmethod
    def _kept(features: ViewFeatures, w: np.ndarray, tau: float,
              weight: float = 1.0) -> dict[tuple[str, str], float]:
        """The pairs with |w| ≥ tau, times ``weight``, rounded to 9 decimals, in
        ``pair_keys`` order."""
        rows, cols = np.nonzero(np.abs(w) >= tau)
        n_t = len(features.tools)
        keys = features.pair_keys
        # weight 1.0 leaves every value as it is (1.0 · x == x in IEEE arithmetic)
        return {keys[i * n_t + j]: round(weight * float(w[i, j]), 9)
                for i, j in zip(rows.tolist(), cols.tolist(), strict=True)}

    def interactions(self, view: RouterView, pools: CandidatePools,
                     p: dict[str, float]) -> dict[tuple[str, str], float]:
        """Learned w(c, t) = p(pair) − p(c)·p(t), kept where |w| ≥ tau ({} without a pair
        model)."""
        if self.pair is None or not pools.contexts or not pools.tools:
            return {}
        return self._interactions(view_features(view, pools), p)

    def _interactions(self, features: ViewFeatures,
                      p: Mapping[str, float]) -> dict[tuple[str, str], float]:
        if self.pair is None or not features.contexts or not features.tools:
            return {}
        return self._kept(features, self._pair_weights(features, p), self.tau, self.pair_weight)

    def problem(self, view: RouterView, pools: CandidatePools, pairs: bool = True,
                lam: float | None = None, p: dict[str, float] | None = None,
                ) -> tuple[JointProblem, dict[str, float]]:
        """The ``JointProblem`` on expected-value unaries (module docstring) and, with
        ``pairs``, learned interactions; also returns p(gold) per candidate (``p``: the
        pools' ``probabilities``, when the caller has them already)."""
        lam = self.lam if lam is None else lam
        features = view_features(view, pools)
        p = self._probabilities(features) if p is None else p
        cost = _token_costs([*view.contexts, *view.tools])
        return JointProblem(
            contexts=features.contexts, tools=features.tools, budget=view.budget,
            unary=_unary(p, cost, view.budget.max_tokens, lam),
            interactions=self._interactions(features, p) if pairs else {},
        ), p

    def record(self) -> dict[str, Any]:
        """The stored model as JSON values (module docstring)."""
        return {
            "family": self.family, "pool_limit": self.pool_limit, "seed": self.seed,
            "context_model": self.lanes["context"].describe(),
            "tool_model": self.lanes["tool"].describe(),
            "pair_model": None if self.pair is None else self.pair.describe(),
            "lambda": self.lam, "tau": None if math.isinf(self.tau) else self.tau,
            "search": self.search, "training": self.training,
            "versions": {p: importlib.metadata.version(p) for p in ("scikit-learn", "numpy")},
            # only when not the default, so a BM25 model's record (and sha256) is as before
            **({} if self.pool_rule == DEFAULT_POOL_RULE else {"pool_rule": self.pool_rule}),
            **({"link": True} if self.link else {}),
            **({"pair_weight": self.pair_weight, "grids": self.grids} if self.grids else {}),
            **({} if self.grid_search == OPTIMAL_SEARCH else {"grid_search": self.grid_search}),
        }

    @cached_property
    def sha256(self) -> str:
        """sha256 of ``record()`` (canonical JSON; computed once, after fitting)."""
        return canonical_sha256(self.record())


def _unary(p: Mapping[str, float], cost: Mapping[str, int], budget: int | None,
           lam: float) -> dict[str, float]:
    """u(r) = p(gold | r) − lam · tokens(r) / budget tokens, rounded to 9 decimals."""
    return {rid: round(pr - (lam * cost[rid] / budget if budget else 0.0), 9)
            for rid, pr in p.items()}


def _stack(rows: Sequence[np.ndarray], width: int) -> np.ndarray:
    return np.vstack(rows) if rows else np.zeros((0, width))


def _token_costs(resources: Sequence[ContextResource | ToolResource]) -> dict[str, int]:
    """Resource id -> its token cost (tokens)."""
    return {r.id: r.token_cost for r in resources}


def lane_matrix(features: ViewFeatures, lane: str, link: bool) -> np.ndarray:
    """The feature rows a lane model reads, shape (candidates of ``lane``, features):
    ``UNARY_FEATURES``, then ``LINK_FEATURES`` when ``link``."""
    if not link:
        return features.unary[lane]
    return np.hstack([features.unary[lane], features.link[lane]])


_POOLS: OrderedDict[tuple[str, object, str], CandidatePools] = OrderedDict()
_POOLS_LOCK = threading.Lock()


def _limit_key(pool_limit: int | tuple[int | None, int | None] | None) -> object:
    return tuple(pool_limit) if isinstance(pool_limit, (tuple, list)) else pool_limit


def training_view(task: BenchmarkTask, pool_limit: PoolLimit,
                   rule: str) -> tuple[RouterView, CandidatePools, ViewFeatures]:
    """(router view, candidate pools by pool rule ``rule``, model-free features) of one
    training task, from the process caches when an equal view (``view_fingerprint``) was
    seen with this pool limit and rule: what the fits (and ``bench/studies``) read of a
    training row."""
    view = task.router_view()
    fingerprint = view_fingerprint(view)
    key = (fingerprint, _limit_key(pool_limit), rule)
    with _POOLS_LOCK:
        pools = _POOLS.get(key)
        if pools is not None:
            _POOLS.move_to_end(key)
    if pools is None:
        pools = candidate_pools(view, pool_limit, rule)
        with _POOLS_LOCK:
            _POOLS[key] = pools
            while len(_POOLS) > POOL_CACHE_SIZE:
                _POOLS.popitem(last=False)
    return view, pools, cached_view_features(view, pools, fingerprint)


def clear_pool_cache() -> None:
    """Forget the training pools kept for the process (benchmarks measure a cold fit)."""
    with _POOLS_LOCK:
        _POOLS.clear()


def _pair_labels(task: BenchmarkTask, features: ViewFeatures) -> np.ndarray:
    """Pair labels in ``pair_keys`` order: membership of the task's gold pairs where it
    has them, else both members gold. Training only (reads gold)."""
    cs, ts = features.context_ids, features.tool_ids
    pairs = {(g.context_id, g.tool_id) for g in task.gold_pairs}
    if pairs:
        return np.asarray([int((c, t) in pairs) for c in cs for t in ts], dtype=int)
    gold = {*task.gold_context_ids, *task.gold_tool_ids}
    in_c = np.asarray([c in gold for c in cs], dtype=int)
    in_t = np.asarray([t in gold for t in ts], dtype=int)
    return np.outer(in_c, in_t).reshape(-1)


def fit_learned_utility(family: str, tasks: Sequence[BenchmarkTask], pool_limit: PoolLimit,
                        seed: int = 0, workers: int | None = None,
                        link: bool = False, lambdas: Sequence[float] | None = None,
                        taus: Sequence[float] | None = None,
                        pair_weights: Sequence[float] = (1.0,),
                        rule: str = DEFAULT_POOL_RULE,
                        search: str = OPTIMAL_SEARCH) -> LearnedUtility:
    """Fit the family's models, lam and tau on training ``tasks`` (module docstring).

    ``rule``: the pool rule of the training pools (``junction.candidates.POOL_RULES``),
    recorded as the model's ``pool_rule``.
    ``link``: the lane models also read ``LINK_FEATURES``. ``lambdas``, ``taus``: the grids
    searched (None: ``LAMBDA_GRID``, ``TAU_GRID``); ``pair_weights``: factors the kept
    interactions are multiplied by, searched with them (ties keep the earlier value of
    each grid, tau first, then the weight, then lam). A model fitted on other grids than
    the defaults records them (``record()["grids"]``) and the weight chosen.
    ``workers``: processes the λ × τ search's exact selections run on (None:
    ``grid.fit_workers()`` for a search of at least ``SPREAD_MIN_PROBLEMS`` large problems,
    else 1; 1: this process only); the fitted model is the same for any value.
    ``search``: how the λ × τ search selects each grid-point problem (``grid.SEARCHES``;
    default ``optimal``, the exact selector); a model fitted by an approximate search records it
    (``record()["grid_search"]``).
    Raises ``LearnedModelError`` when ``tasks`` is empty, ``UnknownNameError`` for an
    unknown ``search``, ``GridWorkerError`` when ``JUNCTION_FIT_WORKERS`` is not an integer
    >= 1 or a worker process fails.
    """
    check_search(search)
    if not tasks:
        raise LearnedModelError(f"family {family!r}: no training tasks")
    prepared = [training_view(t, pool_limit, rule) for t in tasks]
    views = [v for v, _, _ in prepared]
    pools = [p for _, p, _ in prepared]
    features = [f for _, _, f in prepared]
    lanes = _fit_lanes(tasks, pools, features, link, seed)
    model = LearnedUtility(family, pool_limit, seed, lanes, None, _pair_prior(tasks, pools),
                           pool_rule=rule, link=link, grid_search=search)
    # p(gold) depends on the lane models only: once per task
    probabilities = [model._probabilities(f) for f in features]
    model.pair, labels = _fit_pair_model(tasks, pools, features, probabilities,
                                         model.prior, seed)
    grids = (tuple(LAMBDA_GRID if lambdas is None else lambdas),
             tuple(TAU_GRID if taus is None else taus), tuple(pair_weights))
    if grids != (tuple(LAMBDA_GRID), tuple(TAU_GRID), (1.0,)):
        model.grids = {"lambda": list(grids[0]), "tau": list(grids[1]),
                       "pair_weight": list(grids[2])}
    variants, grid = _grid_problems(model, views, pools, features, probabilities, grids)
    success = _grid_success(tasks, views, features, variants, search, workers)
    model.lam, model.tau, model.pair_weight = _choose(model, tasks, grid, success)
    model.training = {
        "n_tasks": len(tasks),
        "suites": dict(sorted(Counter(t.suite for t in tasks).items())),
        "task_ids": [t.task_id for t in tasks],
        "candidates": {lane: lanes[lane].n_rows for lane in lanes},
        "gold_candidates": {lane: lanes[lane].n_positive for lane in lanes},
        "pair_rows": int(labels.shape[0]), "gold_pairs": int(labels.sum()),
    }
    return model


def _fit_lanes(tasks: Sequence[BenchmarkTask], pools: Sequence[CandidatePools],
               features: Sequence[ViewFeatures], link: bool,
               seed: int) -> dict[str, ProbabilityModel]:
    """The fit's first phase: one relevance model per lane, p(gold | the candidate's unary
    features, and ``LINK_FEATURES`` when ``link``), on every training task's pool."""
    names = (*UNARY_FEATURES, *(LINK_FEATURES if link else ()))
    lanes: dict[str, ProbabilityModel] = {}
    for lane in ("context", "tool"):
        X = _stack([lane_matrix(f, lane, link) for f in features], len(names))
        y = np.concatenate([candidate_labels(t, p)[lane]
                            for t, p in zip(tasks, pools, strict=True)]
                           or [np.zeros(0, dtype=int)])
        lanes[lane] = fit_probability_model(X, y, names, seed)
    return lanes


def _pair_prior(tasks: Sequence[BenchmarkTask], pools: Sequence[CandidatePools]) -> PairPrior:
    """Per tool: how often it was gold, of the training tasks with a gold context that
    pooled it (a pair feature)."""
    counts: Counter[str] = Counter()
    seen: Counter[str] = Counter()
    for t, p in zip(tasks, pools, strict=True):
        if t.gold_context_ids:
            for c in p.tools:
                seen[c.resource_id] += 1
                counts[c.resource_id] += c.resource_id in t.gold_tool_ids
    return PairPrior({k: (counts[k], seen[k]) for k in sorted(seen)})


def _fit_pair_model(tasks: Sequence[BenchmarkTask], pools: Sequence[CandidatePools],
                    features: Sequence[ViewFeatures],
                    probabilities: Sequence[Mapping[str, float]], prior: PairPrior,
                    seed: int) -> tuple[ProbabilityModel | None, np.ndarray]:
    """The fit's second phase: the pair model p(both gold | pair features) over the
    context-tool pairs of every task that pooled both (label: ``_pair_labels``), and the
    labels; no model (None) unless at least two pairs are gold."""
    pair_rows, pair_labels = [], []
    for t, p, f, pr in zip(tasks, pools, features, probabilities, strict=True):
        if not (p.contexts and p.tools):
            continue
        pair_rows.append(pair_matrix(f, pr, prior))
        pair_labels.append(_pair_labels(t, f))
    labels = np.concatenate(pair_labels) if pair_labels else np.zeros(0, dtype=int)
    if int(labels.sum()) < 2:
        return None, labels
    return (fit_probability_model(_stack(pair_rows, len(PAIR_FEATURES)), labels,
                                  PAIR_FEATURES, seed), labels)


Grid = list[tuple[float, float, float, list[int]]]
"""The search's grid points in order: (tau, pair weight, lam, each task's index of its
problem variant at that point)."""


def _grid_problems(model: LearnedUtility, views: Sequence[RouterView],
                   pools: Sequence[CandidatePools], features: Sequence[ViewFeatures],
                   probabilities: Sequence[Mapping[str, float]],
                   grids: tuple[tuple[float, ...], tuple[float, ...], tuple[float, ...]]
                   ) -> tuple[list[list[Variant]], Grid]:
    """The λ × τ × weight search's problems: per task its distinct (unaries, kept
    interactions) over the grid, in grid order, and each grid point's index among them
    (``Grid``). ``grids``: (lambdas, taus, pair weights); without a pair model one tau
    (infinite: nothing kept) and one weight."""
    lambda_grid, tau_grid, weight_grid = grids
    taus = tau_grid if model.pair is not None else (math.inf,)
    if model.pair is None:
        weight_grid = (1.0,)
    # w(c, t) depends on the models only: once per task (None: no pairs to weigh)
    weights = [model._pair_weights(f, pr)
               if model.pair is not None and p.contexts and p.tools else None
               for p, f, pr in zip(pools, features, probabilities, strict=True)]
    unaries = [[_unary(pr, _token_costs([*f.contexts, *f.tools]), v.budget.max_tokens, lam)
                for lam in lambda_grid]
               for v, f, pr in zip(views, features, probabilities, strict=True)]
    variants: list[list[Variant]] = [[] for _ in views]
    index: list[dict[tuple, int]] = [{} for _ in views]
    grid: Grid = []
    for tau in taus:
        for weight in weight_grid:
            kept = [{} if w is None else model._kept(f, w, tau, weight)
                    for f, w in zip(features, weights, strict=True)]
            kept_key = [tuple(k.items()) for k in kept]
            for li, lam in enumerate(lambda_grid):
                at = []
                for i in range(len(views)):
                    unary = unaries[i][li]
                    key = (tuple(unary.items()), kept_key[i])
                    if key not in index[i]:
                        index[i][key] = len(variants[i])
                        variants[i].append((unary, kept[i]))
                    at.append(index[i][key])
                grid.append((tau, weight, lam, at))
    return variants, grid


def _grid_success(tasks: Sequence[BenchmarkTask], views: Sequence[RouterView],
                  features: Sequence[ViewFeatures], variants: Sequence[list[Variant]],
                  search: str, workers: int | None) -> list[list[bool]]:
    """Per task, per problem variant: whether the selection ``search`` makes succeeds (the
    task's verifier: training rows may use their gold). The selections run on ``workers``
    processes (None: ``fit_workers()`` for at least ``SPREAD_MIN_PROBLEMS`` problems large
    enough for the branch and cut, else this process)."""
    jobs = [(f.contexts, f.tools, v.budget, vs, search)
            for f, v, vs in zip(features, views, variants, strict=True)]
    if workers is None:  # spread only a search with problems for the branch and cut
        large = sum(len(vs) for f, vs in zip(features, variants, strict=True)
                    if len(f.contexts) + len(f.tools) > AUTO_COMBINATORIAL_MAX)
        workers = fit_workers() if large >= SPREAD_MIN_PROBLEMS else 1
    success: list[list[bool]] = []
    for t, sels in zip(tasks, solve_all(jobs, workers), strict=True):
        verdict: dict[tuple, bool] = {}
        for cs, ts in sels:
            if (cs, ts) not in verdict:
                verdict[(cs, ts)] = verify(t, execute(t, list(cs), list(ts))).success
        success.append([verdict[sel] for sel in sels])
    return success


def _choose(model: LearnedUtility, tasks: Sequence[BenchmarkTask], grid: Grid,
            success: Sequence[list[bool]]) -> tuple[float, float, float]:
    """The search's record and choice: each grid point's training success, averaged per
    suite so every suite weighs the same, appended to ``model.search``; returns the
    (lam, tau, pair weight) of the best (ties keep the earlier point)."""
    best: tuple[float, float, float, float] | None = None
    for tau, weight, lam, at in grid:
        per_suite: dict[str, list[bool]] = {}
        for i, t in enumerate(tasks):
            per_suite.setdefault(t.suite, []).append(success[i][at[i]])
        score = float(np.mean([np.mean(s) for s in per_suite.values()]))
        model.search.append({"lambda": lam, "tau": None if math.isinf(tau) else tau,
                             **({"pair_weight": weight} if model.grids else {}),
                             "training_success": round(score, 6),
                             "by_suite": {k: round(float(np.mean(v)), 6)
                                          for k, v in sorted(per_suite.items())}})
        if best is None or score > best[0] + 1e-12:
            best = (score, lam, tau, weight)
    assert best is not None
    return best[1], best[2], best[3]
