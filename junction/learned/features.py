"""Candidate and pair features for the learned relevance model, from the router view only.

A feature vector is computed from a ``RouterView`` and its candidate pools (the lanes'
BM25 scores, ``junction.candidates``), never from a ``BenchmarkTask``: gold ids, the
verifier and task metadata cannot reach it (tests/test_learned.py checks this as a
property). Labels are computed apart, by ``candidate_labels``, on training tasks only.

Unary features (``UNARY_FEATURES``, one row per candidate of a lane, floats):

- ``bm25``, ``log_bm25``: the lane's BM25 score and log(1 + score);
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
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from junction.candidates import Candidate
from junction.resources import SourceKind, ToolResource
from junction.candidates import CandidatePools
from junction.tasks import BenchmarkTask, RouterView
from junction.text import lexical_tokens

__all__ = [
    "PAIR_FEATURES",
    "UNARY_FEATURES",
    "candidate_labels",
    "name_terms",
    "pair_features",
    "unary_features",
]

UNARY_FEATURES = (
    "bm25", "log_bm25", "rank", "normalised", "margin_next", "gap_best", "log_lane_best",
    "matched", "pool_size", "log_tokens", "schema_params", "name_overlap",
    "query_terms", "query_coverage", *(f"source_{k.value}" for k in SourceKind),
)
"""Unary feature names, in column order (``judge`` is appended when judge scores are used)."""

PAIR_FEATURES = ("logit_context", "logit_tool", "normalised_context", "normalised_tool",
                 "tool_terms_in_context", "pair_prior", "id_named")
"""Pair feature names, in column order."""

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SEPARATORS = re.compile(r"[_.\-\s/]+")


def name_terms(tool_id: str) -> set[str]:
    """Lexical terms of a tool id: split at ``_ . - /`` and camel case, then
    ``lexical_tokens`` (so the same normalisation as BM25)."""
    return set(lexical_tokens(" ".join(_SEPARATORS.split(_CAMEL.sub(" ", tool_id)))))


def _schema_params(tool: ToolResource) -> int:
    props = tool.json_schema.get("properties")
    return len(props) if isinstance(props, dict) else 0


def _lane_rows(view: RouterView, lane: Sequence[Candidate], query: set[str],
               judge: Mapping[str, float] | None) -> list[list[float]]:
    best = max((c.score for c in lane), default=0.0)
    rows = []
    for i, c in enumerate(lane):
        resource = view.context(c.resource_id) if c.kind == "context" else view.tool(c.resource_id)
        nxt = lane[i + 1].score if i + 1 < len(lane) else c.score
        if isinstance(resource, ToolResource):
            text = f"{resource.description} {resource.rendered_schema()}"
            terms = name_terms(resource.id)
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
               len(query & set(lexical_tokens(text))) / len(query) if query else 0.0, *kinds]
        if judge is not None:
            row.append(float(judge[c.resource_id]))
        rows.append(row)
    return rows


def unary_features(view: RouterView, pools: CandidatePools,
                   judge: Mapping[str, float] | None = None) -> dict[str, np.ndarray]:
    """Feature matrices per lane: ``{"context": (n_contexts, F), "tool": (n_tools, F)}``,
    rows in the pools' rank order, columns ``UNARY_FEATURES`` (+ ``judge``).

    ``judge``: resource id -> judge score (logits) for every pool candidate, or None.
    Raises ``KeyError`` naming a candidate the view does not hold or the judge did not score.
    """
    query = set(lexical_tokens(view.objective))
    width = len(UNARY_FEATURES) + (judge is not None)
    return {lane: np.asarray(_lane_rows(view, cands, query, judge), dtype=float).reshape(-1, width)
            for lane, cands in (("context", pools.contexts), ("tool", pools.tools))}


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


def pair_features(view: RouterView, pools: CandidatePools, p_unary: Mapping[str, float],
                  prior: PairPrior) -> tuple[list[tuple[str, str]], np.ndarray]:
    """Pairs (context id, tool id) of the pools in rank order, and their feature matrix
    (n_pairs, ``len(PAIR_FEATURES)``); ``p_unary``: resource id -> calibrated p(gold)."""
    best_c = max((c.score for c in pools.contexts), default=0.0)
    best_t = max((t.score for t in pools.tools), default=0.0)
    context_tokens = {c.resource_id: set(lexical_tokens(view.context(c.resource_id).content))
                      for c in pools.contexts}
    keys, rows = [], []
    for c in pools.contexts:
        for t in pools.tools:
            terms = name_terms(t.resource_id)
            inside = len(terms & context_tokens[c.resource_id]) / len(terms) if terms else 0.0
            keys.append((c.resource_id, t.resource_id))
            named = re.search(rf"(?<![A-Za-z0-9_]){re.escape(t.resource_id)}(?![A-Za-z0-9_])",
                              view.context(c.resource_id).content) is not None
            rows.append([_logit(p_unary[c.resource_id]), _logit(p_unary[t.resource_id]),
                         c.score / best_c if best_c > 0 else 0.0,
                         t.score / best_t if best_t > 0 else 0.0, inside,
                         prior.rate(t.resource_id), float(named)])
    return keys, np.asarray(rows, dtype=float).reshape(-1, len(PAIR_FEATURES))
