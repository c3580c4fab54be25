"""``learned_coverage``: spend the budget on the event retrieval success needs.

A needed tool is usable when it is exposed together with an exposed document that names it
(``junction.text.names_id``: the document's text names the tool id verbatim; read from the
router view, never gold); a tool that no pooled document names is usable alone. From
p(gold) per pooled candidate (a relevance model fitted on training rows only), assuming the
gold events independent given the view:

    P(success) ≈ Π_t (1 − p_t · (1 − y_t)) · Π_c (1 − γ p_c · (1 − z_c))

with y_t = 1 when tool t is usable and z_c = 1 when context c is exposed. Its logarithm is
linear in y and z up to a constant: tool t is worth a(p_t) = −log(1 − p_t) once usable
(``log_success``); the alternative ``expected_usable`` values it p_t (the expected number
of usable needed tools). The context term covers suites whose gold is on contexts, and
tasks graded on their documents alone: γ = Π_t (1 − p_t) over the pooled tools is the
probability that no tool is needed, so a context counts γ · a(p_c).

``explain`` says which naming document makes a tool usable: ``any`` (every document naming
t does; the tie rule then picks the cheapest) or ``likely`` (the document that explains t
is the required one: given t is needed, naming document c is it with probability
r_ct = p_c / Σ_{c' names t} p_c', so exposing c alone makes t usable with probability
r_ct: worth log(1 − p_t (1 − r_ct)) − log(1 − p_t), or p_t r_ct expected). Either way only
the best exposed explanation of a tool counts (``junction.select.coverage``), a document
naming a tool is worth nothing without it, and a tool some pooled document names is worth
nothing without one. Candidates with p below the admission floor are worth nothing
(the floor is fitted: the value in ``FLOORS`` with the best training success, ties to
the smaller); p is clipped to [``P_CLIP``, 1 − ``P_CLIP``].

Abstention: where training shows that the family grades it (``CoverageModel.abstention``:
training tasks without a gold tool whose verifier accepts the empty set and refuses a
pooled tool alone, as BFCL's irrelevance rows), a task may need no tool, and then any
exposed tool fails it. With the tools chosen, P(success) = γ · (exp(V_T) − 1), V_T what
they are worth under ``log_success`` (``tool_log_value``); with none, γ. So the strategy
exposes no tool when V_T < log 2 (the contexts are then chosen again alone).

The fit is the relevance model's (``fit_relevance``; today's lane models where that module
is absent) plus the floor: one exact coverage selection per training task and floor, no
λ × τ grid. The selection is exact (``CoverageSelector``, HiGHS), status ``optimal`` when
proven. Cross-fitting, training sources and trace fields are those of
``junction.strategies.learned`` (``learned_model``, ``learned_family``, ``learned_p``,
``learned_fold`` ...), plus ``coverage_objective``, ``coverage_explain``,
``coverage_floor`` and, where the family grades abstention, ``coverage_tool_log_value``
(V_T) and ``coverage_abstained``. A suite without a training part keeps the task's own utilities and
pairs and selects as ``exact`` (trace ``learned_fallback``).
"""

from __future__ import annotations

import importlib.metadata
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol

import numpy as np

from junction.agent.execution import execute
from junction.candidates import (
    DEFAULT_POOL_RULE,
    CandidatePools,
    PoolLimit,
    PoolRequest,
    candidate_pools,
    check_pool_rule,
)
from junction.learned.crossfit import CrossFitFold
from junction.learned.features import (
    UNARY_FEATURES,
    candidate_labels,
    view_features,
)
from junction.learned.model import (
    LearnedModelError,
    ProbabilityModel,
    canonical_sha256,
    fit_probability_model,
)
from junction.learned.relevance import LaneScores
from junction.select import AutoJointSelector
from junction.select.coverage import CoverageProblem, CoverageSelector, coverage_value
from junction.strategies.base import StrategyResult, joint_problem
from junction.strategies.learned import FoldFitted, TrainingSource
from junction.tasks import BenchmarkTask, RouterView
from junction.verifiers import verify

__all__ = [
    "ABSTAIN_SHARE",
    "EXPLAIN",
    "FLOORS",
    "OBJECTIVES",
    "PRIOR_WEIGHT",
    "P_CLIP",
    "CoverageModel",
    "CoverageStrategy",
    "ExplanationCounts",
    "LaneScores",
    "coverage_problem",
    "fit_coverage_model",
    "make_coverage_strategy",
    "tool_log_value",
]

OBJECTIVES = ("log_success", "expected_usable")
"""What a usable needed tool is worth (module docstring)."""

EXPLAIN = ("any", "likely", "learned")
"""Which naming document makes a tool usable (module docstring)."""

PRIOR_WEIGHT = 1.0
"""Pseudo-count of the ``likely`` estimate in the ``learned`` one (a tool gold n times in
training weighs its counts n : 1 against it)."""


@dataclass(frozen=True)
class ExplanationCounts:
    """What training gold says about which document makes a tool usable (``learned``):
    ``gold[t]`` the training tasks where tool t was gold, ``unpaired[t]`` those of them with
    no gold pair for t (the tool counted usable alone), ``paired[(c, t)]`` those where
    document c was a gold pair's document for t. Counted on training rows only; keyed by
    resource id, as a model feature keyed by id is."""

    gold: Mapping[str, int] = field(default_factory=dict)
    unpaired: Mapping[str, int] = field(default_factory=dict)
    paired: Mapping[tuple[str, str], int] = field(default_factory=dict)

    @classmethod
    def of(cls, tasks: Sequence[BenchmarkTask]) -> ExplanationCounts:
        gold: dict[str, int] = {}
        unpaired: dict[str, int] = {}
        paired: dict[tuple[str, str], int] = {}
        for task in tasks:
            docs: dict[str, set[str]] = {}
            for pair in task.gold_pairs:
                docs.setdefault(pair.tool_id, set()).add(pair.context_id)
            for t in set(task.gold_tool_ids):
                gold[t] = gold.get(t, 0) + 1
                if not docs.get(t):
                    unpaired[t] = unpaired.get(t, 0) + 1
                for c in docs.get(t, ()):
                    paired[(c, t)] = paired.get((c, t), 0) + 1
        return cls(dict(sorted(gold.items())), dict(sorted(unpaired.items())),
                   dict(sorted(paired.items())))

    @property
    def unpaired_rate(self) -> float:
        """Share of (training task, gold tool) cases without a gold pair, Jeffreys-smoothed:
        (k + 0.5) / (n + 1)."""
        return (sum(self.unpaired.values()) + 0.5) / (sum(self.gold.values()) + 1)

    def usable(self, tool_id: str, context_id: str | None, guess: float) -> float:
        """P(the tool is usable | it is needed, exposed with ``context_id`` alone of its
        naming documents; None: with none), smoothed toward ``guess`` with
        ``PRIOR_WEIGHT``: (unpaired + paired with c + w · guess) / (gold + w)."""
        n = self.gold.get(tool_id, 0)
        k = self.unpaired.get(tool_id, 0)
        if context_id is not None:
            k += self.paired.get((context_id, tool_id), 0)
        return (k + PRIOR_WEIGHT * guess) / (n + PRIOR_WEIGHT)

    def record(self) -> dict[str, Any]:
        return {"gold": dict(self.gold), "unpaired": dict(self.unpaired),
                "paired": [[c, t, k] for (c, t), k in self.paired.items()]}

FLOORS = (0.0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5)
"""Admission floors on p(gold) a fit may try on training (``floors=FLOORS``; the smallest of
equal training success wins: more exposure)."""

DEFAULT_FLOORS = (0.01,)
"""The strategy's floor: one value, so the fit solves no selection on training."""

RelevanceOptions = tuple[tuple[str, str | int | tuple[str, ...]], ...]
"""``fit_relevance``'s options as (field of ``RelevanceConfig``, value) pairs: hashable,
so they key the fitted-model cache."""

DEFAULT_RELEVANCE_OPTIONS: RelevanceOptions = (
    ("features", ("prior", "knn")), ("learner", "logistic"), ("propagate", "none"),
    ("iterations", 1), ("knn_neighbours", 10), ("target", "gold"))
"""``fit_relevance``'s options by default, every field given (so a change of that module's
own default does not change this strategy): the lane models plus how often a resource was
gold in training (``prior``) and in the training tasks whose objectives are nearest
(``knn``), logistic, no propagation (``junction.learned.relevance``); the configuration
measured in docs/strategies.md, "Coverage"."""

P_CLIP = 1e-6
"""p(gold) is clipped to [P_CLIP, 1 − P_CLIP] before any logarithm."""



class RelevanceModel(Protocol):
    """What the coverage strategy reads of a relevance model: its scores and its record
    (JSON values, part of the model's sha256)."""

    def score(self, view: RouterView, pools: CandidatePools) -> LaneScores: ...

    def describe(self) -> dict[str, Any]: ...


@dataclass
class LaneRelevance:
    """Today's lane models (``junction.learned.model``) as a relevance model: one
    calibrated logistic model per lane on ``UNARY_FEATURES``, fitted on training pools."""

    lanes: dict[str, ProbabilityModel]

    def score(self, view: RouterView, pools: CandidatePools) -> LaneScores:
        features = view_features(view, pools)
        out: list[dict[str, float]] = []
        for lane, ids in (("context", features.context_ids), ("tool", features.tool_ids)):
            predicted = self.lanes[lane].predict(features.unary[lane])
            out.append({rid: float(p) for rid, p in zip(ids, predicted, strict=True)})
        return LaneScores(out[0], out[1])

    def describe(self) -> dict[str, Any]:
        return {"kind": "lanes", "context_model": self.lanes["context"].describe(),
                "tool_model": self.lanes["tool"].describe()}


def _training_pools(tasks: Sequence[BenchmarkTask], pool_limit: PoolLimit,
                    rule: str) -> list[tuple[BenchmarkTask, RouterView, CandidatePools]]:
    out = []
    for t in tasks:
        view = t.router_view()
        out.append((t, view, candidate_pools(view, pool_limit, rule)))
    return out


def _fit_lanes(prepared: Sequence[tuple[BenchmarkTask, RouterView, CandidatePools]],
               seed: int) -> LaneRelevance:
    lanes: dict[str, ProbabilityModel] = {}
    width = len(UNARY_FEATURES)
    for lane in ("context", "tool"):
        rows = [view_features(v, p).unary[lane] for _, v, p in prepared]
        X = np.vstack(rows) if rows else np.zeros((0, width))
        y = np.concatenate([candidate_labels(t, p)[lane] for t, _, p in prepared]
                           or [np.zeros(0, dtype=int)])
        lanes[lane] = fit_probability_model(X, y, UNARY_FEATURES, seed)
    return LaneRelevance(lanes)


def _fit_relevance(tasks: Sequence[BenchmarkTask], prepared, rule: str, pool_limit: PoolLimit,
                   seed: int, relevance: str,
                   options: RelevanceOptions = ()) -> RelevanceModel:
    """The relevance model: ``junction.learned.relevance.fit_relevance`` with ``options``
    (``relevance == "model"``) or the lane models (``"lanes"``)."""
    if relevance == "lanes":
        return _fit_lanes(prepared, seed)
    from junction.learned.relevance import fit_relevance, relevance_config

    return fit_relevance(tasks, rule, seed=seed, pool_limit=pool_limit,
                         config=relevance_config(dict(options)))


def _clip(p: float) -> float:
    return min(max(float(p), P_CLIP), 1.0 - P_CLIP)


def _worth(p: float, objective: str) -> float:
    return -math.log1p(-p) if objective == "log_success" else p


def _gain(p: float, usable: float, objective: str) -> float:
    """What exposing a tool of p(gold) ``p`` is worth when it is then usable with
    probability ``usable`` (if needed): log(1 − p (1 − usable)) − log(1 − p), or p · usable."""
    if objective == "log_success":
        return math.log1p(-p * (1.0 - usable)) - math.log1p(-p)
    return p * usable


def coverage_problem(view: RouterView, pools: CandidatePools, scores: LaneScores,
                     objective: str = "log_success", explain: str = "likely",
                     floor: float = 0.0,
                     counts: ExplanationCounts | None = None) -> CoverageProblem:
    """The ``CoverageProblem`` of the module docstring over ``pools`` (values rounded to 9
    decimals). ``scores`` must hold p for every pooled candidate (``KeyError`` naming the
    one missing); ``counts``: the training counts ``explain="learned"`` reads (None: none,
    every tool at the ``likely`` estimate). ``ValueError`` for an unknown ``objective`` or
    ``explain``."""
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}, got {objective!r}")
    if explain not in EXPLAIN:
        raise ValueError(f"explain must be one of {', '.join(EXPLAIN)}, got {explain!r}")
    features = view_features(view, pools)
    pc = {c.id: _clip(scores.context_p[c.id]) for c in features.contexts}
    pt = {t.id: _clip(scores.tool_p[t.id]) for t in features.tools}
    # γ: no pooled tool needed (independence given the view)
    gamma = math.exp(math.fsum(math.log1p(-p) for p in pt.values()))
    context_value = {c: round(gamma * _worth(p, objective), 9)
                     for c, p in pc.items() if p >= floor}
    named = features.pair_named  # (contexts, tools): 1.0 where the context names the tool
    tool_value: dict[str, float] = {}
    explained: dict[tuple[str, str], float] = {}
    for j, t in enumerate(features.tools):
        p = pt[t.id]
        if p < floor:
            continue
        namers = [features.contexts[i].id for i in np.flatnonzero(named[:, j])]
        if not namers:
            tool_value[t.id] = round(_worth(p, objective), 9)
            continue
        total = math.fsum(pc[c] for c in namers)
        if explain == "learned":
            table = counts or ExplanationCounts()
            base = table.unpaired_rate
            bare = _gain(p, table.usable(t.id, None, base), objective)
            if bare > 0:
                tool_value[t.id] = round(bare, 9)
        for c in namers:
            if explain == "any":
                v = _worth(p, objective)
            elif explain == "likely":
                v = _gain(p, pc[c] / total, objective)
            else:
                guess = base + (1.0 - base) * pc[c] / total
                v = _gain(p, table.usable(t.id, c, guess), objective)
            explained[(c, t.id)] = round(v, 9)
    return CoverageProblem(features.contexts, features.tools, view.budget,
                           context_value=context_value, tool_value=tool_value,
                           explained_value=explained)


@dataclass
class CoverageModel:
    """A fitted family model: the relevance model, the objective, and the floor chosen on
    training (``search``: training success per floor)."""

    family: str
    pool_limit: PoolLimit
    seed: int
    relevance: RelevanceModel
    objective: str
    explain: str
    pool_rule: str = DEFAULT_POOL_RULE
    floor: float = 0.0
    counts: ExplanationCounts = field(default_factory=ExplanationCounts)
    abstention: float = 0.0
    """Share of the training tasks without a gold tool whose verifier accepts the empty set
    and refuses a pooled tool alone (Jeffreys-smoothed; 0 when training has no such task):
    above ``ABSTAIN_SHARE`` the family grades abstention (``select_abstaining``)."""
    search: list[dict[str, Any]] = field(default_factory=list)
    training: dict[str, Any] = field(default_factory=dict)

    def scores(self, view: RouterView, pools: CandidatePools) -> LaneScores:
        """p(gold) per pooled candidate (the relevance model's)."""
        return self.relevance.score(view, pools)

    def problem(self, view: RouterView, pools: CandidatePools,
                scores: LaneScores | None = None) -> CoverageProblem:
        scores = self.scores(view, pools) if scores is None else scores
        return coverage_problem(view, pools, scores, self.objective, self.explain,
                                self.floor, self.counts)

    def record(self) -> dict[str, Any]:
        """The stored model as JSON values."""
        relevance = self.relevance.describe()
        return {"family": self.family, "pool_limit": self.pool_limit, "seed": self.seed,
                "strategy_kind": "coverage", "objective": self.objective,
                "explain": self.explain, "pool_rule": self.pool_rule, "floor": self.floor,
                "relevance": relevance, "search": self.search, "training": self.training,
                "abstention": round(self.abstention, 6),
                **({"counts": self.counts.record()} if self.explain == "learned" else {}),
                "versions": {p: importlib.metadata.version(p)
                             for p in ("scikit-learn", "numpy", "highspy")}}

    @cached_property
    def sha256(self) -> str:
        """sha256 of ``record()`` (canonical JSON)."""
        return canonical_sha256(self.record())


def fit_coverage_model(family: str, tasks: Sequence[BenchmarkTask], pool_limit: PoolLimit,
                       seed: int = 0, rule: str = DEFAULT_POOL_RULE,
                       objective: str = "log_success", explain: str = "learned",
                       relevance: str = "model",
                       floors: Sequence[float] = DEFAULT_FLOORS,
                       relevance_options: RelevanceOptions = DEFAULT_RELEVANCE_OPTIONS,
                       ) -> CoverageModel:
    """Fit the relevance model on training ``tasks`` (pools by ``rule``) and choose the
    floor among ``floors`` by training success of the coverage selection (per suite mean,
    so every suite of the family weighs the same; ties to the smaller floor; one floor:
    no selection on training). ``relevance_options``: ``fit_relevance``'s options
    (``relevance="model"``). Counts ``ExplanationCounts`` on the same tasks. Raises
    ``LearnedModelError`` when ``tasks`` is empty, ``ValueError`` for an unknown
    ``objective``, ``explain`` or ``relevance``."""
    if not tasks:
        raise LearnedModelError(f"family {family!r}: no training tasks")
    if relevance not in ("lanes", "model"):
        raise ValueError(f"relevance must be 'lanes' or 'model', got {relevance!r}")
    prepared = _training_pools(tasks, pool_limit, rule)
    model = CoverageModel(family, pool_limit, seed, _fit_relevance(
        tasks, prepared, rule, pool_limit, seed, relevance, relevance_options), objective,
        explain, rule)
    model.counts = ExplanationCounts.of(tasks)
    model.abstention = _abstention_rate(prepared)
    model.training = {"n_tasks": len(tasks), "task_ids": [t.task_id for t in tasks]}
    floors = sorted(set(floors))
    if len(floors) == 1:  # nothing to choose: no selection on training
        model.floor = floors[0]
        return model
    scored = [(t, v, p, model.scores(v, p)) for t, v, p in prepared]
    selector = CoverageSelector()
    best: tuple[float, float] | None = None
    for floor in floors:
        per_suite: dict[str, list[bool]] = {}
        for t, v, p, s in scored:
            sel = selector.select(coverage_problem(v, p, s, objective, explain, floor,
                                                   model.counts))
            ok = verify(t, execute(t, list(sel.context_ids), list(sel.tool_ids))).success
            per_suite.setdefault(t.suite, []).append(ok)
        score = float(np.mean([np.mean(s) for s in per_suite.values()]))
        model.search.append({"floor": floor, "training_success": round(score, 6)})
        if best is None or score > best[0] + 1e-12:
            best = (score, floor)
    assert best is not None
    model.floor = best[1]
    return model


def _abstention_rate(prepared: Sequence[tuple[BenchmarkTask, RouterView, CandidatePools]]
                     ) -> float:
    """``CoverageModel.abstention`` from training tasks (reads their gold and verifier)."""
    n = k = 0
    for task, _, pools in prepared:
        if task.gold_tool_ids or not pools.tools:
            continue
        n += 1
        empty = verify(task, execute(task, [], [])).success
        alone = verify(task, execute(task, [], [pools.tools[0].resource_id])).success
        k += empty and not alone
    return 0.0 if n == 0 else (k + 0.5) / (n + 1)


def tool_log_value(model: CoverageModel, view: RouterView, pools: CandidatePools,
                   scores: LaneScores, context_ids: Sequence[str],
                   tool_ids: Sequence[str]) -> float:
    """V_T: what the exposed tools are worth under ``log_success`` (with the exposed
    contexts explaining them, the contexts' own value left out), so that
    P(every needed pooled tool usable) = γ · exp(V_T), γ = P(no pooled tool needed)."""
    problem = coverage_problem(view, pools, scores, "log_success", model.explain,
                               model.floor, model.counts)
    tools_only = CoverageProblem(problem.contexts, problem.tools, problem.budget,
                                 tool_value=problem.tool_value,
                                 explained_value=problem.explained_value)
    return coverage_value(tools_only, context_ids, tool_ids)


ABSTAIN_SHARE = 0.5
"""A family whose ``CoverageModel.abstention`` is above this grades abstention."""


class CoverageStrategy(FoldFitted[CoverageModel]):
    """A ``Strategy`` on the coverage objective (module docstring); its artifacts are the
    models it used."""

    def __init__(self, training: TrainingSource | None = None, seed: int = 0,
                 fold: CrossFitFold | None = None, pool: str | None = None,
                 objective: str = "log_success", explain: str = "learned",
                 relevance: str = "model", floors: tuple[float, ...] = DEFAULT_FLOORS,
                 relevance_options: RelevanceOptions = DEFAULT_RELEVANCE_OPTIONS,
                 _used: dict[tuple[object, ...], CoverageModel] | None = None) -> None:
        if objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}, "
                             f"got {objective!r}")
        if explain not in EXPLAIN:
            raise ValueError(f"explain must be one of {', '.join(EXPLAIN)}, got {explain!r}")
        self.training = training
        self.seed = seed
        self.fold = fold
        self.pool = None if pool is None else check_pool_rule(pool)
        self.objective = objective
        self.explain = explain
        self.relevance = relevance
        self.floors = tuple(floors)
        self.relevance_options = tuple(relevance_options)
        self.selector = CoverageSelector()
        self._used: dict[tuple[object, ...], CoverageModel] = {} if _used is None else _used

    def for_fold(self, fold: CrossFitFold | None) -> CoverageStrategy:
        """This strategy bound to one cross-fitting ``fold`` (shares the record of models
        used)."""
        return CoverageStrategy(self.training, self.seed, fold, self.pool, self.objective,
                                self.explain, self.relevance, self.floors,
                                self.relevance_options, self._used)

    def model(self, family: str, pool_limit: PoolLimit,
              run_rule: str = DEFAULT_POOL_RULE) -> CoverageModel:
        """The family's fitted model (once per process and key; thread-safe)."""
        if self.training is None:
            raise ValueError("a learned strategy made without a training source has no model")
        fold = self.fold if self.training.is_cross_fitted(family) else None
        rule = self.pool or run_rule
        key = (self.training, family, pool_limit, self.seed, fold, rule, self.objective,
               self.explain, self.relevance, self.floors, self.relevance_options)
        return self._fitted(key, lambda: fit_coverage_model(
            family, self._training_tasks(family)[0], pool_limit, self.seed, rule,
            self.objective, self.explain, self.relevance, self.floors,
            self.relevance_options))

    def select(self, view: RouterView, pool: PoolRequest | PoolLimit) -> StrategyResult:
        """The coverage selection on the family's relevance (module docstring)."""
        pool = PoolRequest.of(pool)
        pools = candidate_pools(view, pool, self.pool or pool.rule)
        family = self.training.family(view.suite) if self.training is not None else None
        if family is None:
            reason = ("no training source" if self.training is None
                      else f"suite {view.suite!r} has no training part: the task's utilities")
            return StrategyResult(AutoJointSelector().select(joint_problem(view, pools)),
                                  pools, {"learned_fallback": reason})
        model = self.model(family, pool.limit, pool.rule)
        extra = self._fold_extra(view, family, model.training)
        scores = model.scores(view, pools)
        problem = model.problem(view, pools, scores)
        selection = self.selector.select(problem)
        if model.abstention > ABSTAIN_SHARE and selection.tool_ids:
            # success is γ · (exp(V_T) − 1) with these tools, γ with none (the task may
            # need no tool, and then any exposed tool fails it): abstain below log 2
            value = tool_log_value(model, view, pools, scores, selection.context_ids,
                                   selection.tool_ids)
            extra["coverage_tool_log_value"] = round(value, 6)
            if value < math.log(2.0):
                selection = self.selector.select(CoverageProblem(
                    problem.contexts, (), problem.budget, context_value=problem.context_value))
                extra["coverage_abstained"] = True
        p = {**scores.context_p, **scores.tool_p}
        extra.update({
            "learned_model": model.sha256, "learned_family": family,
            "learned_p": {rid: round(float(v), 6) for rid, v in sorted(p.items())},
            "coverage_objective": model.objective, "coverage_explain": model.explain,
            "coverage_floor": model.floor,
        })
        if self.pool is not None:
            extra["strategy_pool_rule"] = self.pool
        return StrategyResult(selection, pools, extra)


def make_coverage_strategy(training: TrainingSource | None = None, pool: str | None = None,
                           objective: str = "log_success", explain: str = "learned",
                           relevance: str = "model",
                           floors: tuple[float, ...] = DEFAULT_FLOORS,
                           relevance_options: RelevanceOptions = (
                               DEFAULT_RELEVANCE_OPTIONS),
                           ) -> CoverageStrategy:
    """``learned_coverage`` (module docstring). ``pool``: a pool rule the strategy ranks
    and fits by whatever the run's (None: the run's); ``objective`` in ``OBJECTIVES``,
    ``explain`` in ``EXPLAIN``; ``relevance``: ``lanes`` (today's lane models) or ``model``
    (``junction.learned.relevance``); ``floors``: the admission floors tried on training.
    Raises ``ValueError`` for an unknown objective or explain, ``UnknownNameError`` for an
    unknown pool rule."""
    return CoverageStrategy(training, pool=pool, objective=objective, explain=explain,
                            relevance=relevance, floors=floors,
                            relevance_options=relevance_options)
