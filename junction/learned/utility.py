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
"""

from __future__ import annotations

import importlib.metadata
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from junction.agent.execution import execute, verify
from junction.learned.features import (
    PAIR_FEATURES,
    UNARY_FEATURES,
    PairPrior,
    candidate_labels,
    pair_features,
    unary_features,
)
from junction.learned.model import (
    LearnedModelError,
    ProbabilityModel,
    canonical_sha256,
    fit_probability_model,
)
from junction.select import AutoJointSelector, JointProblem, Selector
from junction.candidates import CandidatePools, candidate_pools
from junction.tasks import BenchmarkTask, RouterView

__all__ = [
    "LAMBDA_GRID",
    "TAU_GRID",
    "LearnedUtility",
    "fit_learned_utility",
]

LAMBDA_GRID = (0.0, 0.1, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0)
"""Token prices tried on training (unitless: utility per budget's worth of tokens). At 1.0 a
schema that costs a fifth of the budget must have p(gold) > 0.2 to be exposed."""

TAU_GRID = (0.02, 0.05, 0.1, 0.2)
"""Interaction thresholds |w| tried on training when a pair model exists."""


@dataclass
class LearnedUtility:
    """A fitted family model: lane models, optional pair model, lam and tau."""

    family: str
    pool_limit: int | None
    seed: int
    lanes: dict[str, ProbabilityModel]
    pair: ProbabilityModel | None
    prior: PairPrior
    lam: float = 0.0
    tau: float = math.inf
    search: list[dict[str, Any]] = field(default_factory=list)
    training: dict[str, Any] = field(default_factory=dict)

    def probabilities(self, view: RouterView, pools: CandidatePools) -> dict[str, float]:
        """Resource id -> calibrated p(gold) for every candidate of the pools."""
        X = unary_features(view, pools)
        out: dict[str, float] = {}
        for lane, cands in (("context", pools.contexts), ("tool", pools.tools)):
            for c, p in zip(cands, self.lanes[lane].predict(X[lane])):
                out[c.resource_id] = float(p)
        return out

    def interactions(self, view: RouterView, pools: CandidatePools,
                     p: dict[str, float]) -> dict[tuple[str, str], float]:
        """Learned w(c, t) = p(pair) − p(c)·p(t), kept where |w| ≥ tau ({} without a pair
        model)."""
        if self.pair is None or not pools.contexts or not pools.tools:
            return {}
        keys, X = pair_features(view, pools, p, self.prior)
        out = {}
        for key, p_pair in zip(keys, self.pair.predict(X)):
            w = float(p_pair) - p[key[0]] * p[key[1]]
            if abs(w) >= self.tau:
                out[key] = round(w, 9)
        return out

    def problem(self, view: RouterView, pools: CandidatePools, pairs: bool = True,
                lam: float | None = None, p: dict[str, float] | None = None,
                ) -> tuple[JointProblem, dict[str, float]]:
        """The ``JointProblem`` on expected-value unaries (module docstring) and, with
        ``pairs``, learned interactions; also returns p(gold) per candidate (``p``: the
        pools' ``probabilities``, when the caller has them already)."""
        lam = self.lam if lam is None else lam
        p = self.probabilities(view, pools) if p is None else p
        budget = view.budget.max_tokens
        cost = {r.id: r.token_cost for r in (*view.contexts, *view.tools)}
        unary = {rid: round(pr - (lam * cost[rid] / budget if budget else 0.0), 9)
                 for rid, pr in p.items()}
        return JointProblem(
            contexts=tuple(view.context(c.resource_id) for c in pools.contexts),
            tools=tuple(view.tool(t.resource_id) for t in pools.tools),
            budget=view.budget, unary=unary,
            interactions=self.interactions(view, pools, p) if pairs else {},
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
        }

    @cached_property
    def sha256(self) -> str:
        """sha256 of ``record()`` (canonical JSON; computed once, after fitting)."""
        return canonical_sha256(self.record())


def _stack(rows: Sequence[np.ndarray], width: int) -> np.ndarray:
    return np.vstack(rows) if rows else np.zeros((0, width))


def _success(task: BenchmarkTask, problem: JointProblem, selector: Selector) -> bool:
    sel = selector.select(problem)
    return verify(task, execute(task, sel.context_ids, sel.tool_ids)).success


def fit_learned_utility(family: str, tasks: Sequence[BenchmarkTask], pool_limit: int | None,
                        seed: int = 0) -> LearnedUtility:
    """Fit the family's models, lam and tau on training ``tasks`` (module docstring).

    Raises ``LearnedModelError`` when ``tasks`` is empty.
    """
    if not tasks:
        raise LearnedModelError(f"family {family!r}: no training tasks")
    views = [t.router_view() for t in tasks]
    pools = [candidate_pools(v, pool_limit) for v in views]
    width = len(UNARY_FEATURES)
    lanes: dict[str, ProbabilityModel] = {}
    for lane in ("context", "tool"):
        X = _stack([unary_features(v, p)[lane] for v, p in zip(views, pools)], width)
        y = np.concatenate([candidate_labels(t, p)[lane] for t, p in zip(tasks, pools)]
                           or [np.zeros(0, dtype=int)])
        lanes[lane] = fit_probability_model(X, y, UNARY_FEATURES, seed)
    counts: Counter[str] = Counter()
    seen: Counter[str] = Counter()
    for t, p in zip(tasks, pools):
        if t.gold_context_ids:
            for c in p.tools:
                seen[c.resource_id] += 1
                counts[c.resource_id] += c.resource_id in t.gold_tool_ids
    prior = PairPrior({k: (counts[k], seen[k]) for k in sorted(seen)})
    model = LearnedUtility(family, pool_limit, seed, lanes, None, prior)
    # the pair model: label = both members gold (a task's gold pairs where it has them)
    pair_rows, pair_labels = [], []
    for t, v, p in zip(tasks, views, pools):
        if not (p.contexts and p.tools):
            continue
        keys, X = pair_features(v, p, model.probabilities(v, p), prior)
        gold = {*t.gold_context_ids, *t.gold_tool_ids}
        pairs = {(g.context_id, g.tool_id) for g in t.gold_pairs}
        pair_rows.append(X)
        pair_labels.extend(int((c, tl) in pairs) if pairs else int(c in gold and tl in gold)
                           for c, tl in keys)
    if sum(pair_labels) >= 2:
        model.pair = fit_probability_model(_stack(pair_rows, len(PAIR_FEATURES)), pair_labels,
                                           PAIR_FEATURES, seed)
    selector = AutoJointSelector()
    taus = TAU_GRID if model.pair is not None else (math.inf,)
    best: tuple[float, float, float] | None = None
    # p(gold) does not depend on lam or tau: once per task
    probabilities = [model.probabilities(v, p) for v, p in zip(views, pools)]
    for tau in taus:
        model.tau = tau
        for lam in LAMBDA_GRID:
            per_suite: dict[str, list[bool]] = {}
            for t, v, p, pr in zip(tasks, views, pools, probabilities):
                problem, _ = model.problem(v, p, lam=lam, p=pr)
                per_suite.setdefault(t.suite, []).append(_success(t, problem, selector))
            score = float(np.mean([np.mean(s) for s in per_suite.values()]))
            model.search.append({"lambda": lam, "tau": None if math.isinf(tau) else tau,
                                 "training_success": round(score, 6),
                                 "by_suite": {k: round(float(np.mean(v)), 6)
                                              for k, v in sorted(per_suite.items())}})
            if best is None or score > best[0] + 1e-12:
                best = (score, lam, tau)
    assert best is not None
    model.lam, model.tau = best[1], best[2]
    model.training = {
        "n_tasks": len(tasks),
        "suites": dict(sorted(Counter(t.suite for t in tasks).items())),
        "task_ids": [t.task_id for t in tasks],
        "candidates": {lane: lanes[lane].n_rows for lane in lanes},
        "gold_candidates": {lane: lanes[lane].n_positive for lane in lanes},
        "pair_rows": len(pair_labels), "gold_pairs": int(sum(pair_labels)),
    }
    return model
