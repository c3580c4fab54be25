"""Candidate lanes: rank contexts and tools against the task objective with BM25 (bm25s).

Each lane returns ``Candidate`` records ordered by descending score, then ascending resource
id, cut to ``limit``. Scores are BM25 (Lucene variant, k1=1.5, b=0.75: bm25s defaults,
Robertson & Zaragoza 2009), float >= 0, comparable only within one lane and one query.
Both lanes tokenise with ``junction.text.lexical_tokens`` (one token per CJK or Thai
character; handed to bm25s pre-tokenised). A candidate with score 0 shares no term with
the query: it is not a match (``Candidate.matched`` is False), ranks after every match
(by id, so the pool stays deterministic) and is never credited by the lane metrics
(``junction.evaluate``); it stays in the pool because a task's prior may still make it
worth exposing.

A pool rule (``POOL_RULES``; a run plan's ``pool``, recorded on every trace) says which
lanes make the candidate pools. It is an argument of every selection, never ambient state:
a strategy is handed a ``PoolRequest`` (the run's rule and its pool limit) and passes it to
``candidate_pools``; a strategy that owns its rule (``learned_named``, ``bm25_top_k``) uses
its own whatever the run's. The rules:

- ``bm25``: the BM25 lanes above (the default);
- ``dense``: the dense lanes (``junction.dense``: MaxP cosine of the objective against each
  candidate's text, clipped at 0; a candidate at 0 is not a match);
- ``bm25_named``: the BM25 lanes, and the context lane widened by every context, beyond
  the BM25 top ``limit``, whose content names a pooled tool's id verbatim as a whole
  identifier (``junction.text.names_id``), in BM25 order after the top ``limit``. A
  document that says "use open_bank_account_4821" names its tool whatever the query's
  words: the coupling is read from the view's own text, never from gold;
- ``hybrid``: both, merged by reciprocal rank fusion (Cormack, Clarke & Büttcher 2009,
  "Reciprocal Rank Fusion outperforms Condorcet and individual Rank Learning Methods"):
  score = sum over the two lanes of 1 / (``RRF_K`` + rank), rank 1-based among that lane's
  matches; a candidate neither lane matches scores 0. ``RRF_K`` = 60 is the paper's.

The dense lanes read the same text as the BM25 ones (``context_text``, ``tool_text``). A
first stage finds; it never admits: what is exposed is the strategy's decision.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from junction.registry import PLUGINS, Catalog, load
from junction.resources import ContextResource, ResourceKind, ToolResource
from junction.tasks import RouterView
from junction.text import lexical_tokens, names_id

if TYPE_CHECKING:  # imported where an index is built: `junction`'s start-up (its options,
    import bm25s  # its refusals) does not pay for it


__all__ = [
    "DEFAULT_POOL_RULE",
    "POOL_RULES",
    "RRF_K",
    "Candidate",
    "CandidatePools",
    "DenseContextCandidateGenerator",
    "DenseToolCandidateGenerator",
    "LexicalContextCandidateGenerator",
    "LexicalToolCandidateGenerator",
    "PoolLimit",
    "PoolRequest",
    "PoolRuleInfo",
    "bm25_scores",
    "candidate_pools",
    "check_pool_rule",
    "context_text",
    "normalise_scores",
    "reciprocal_rank_fusion",
    "register_pool_rule",
    "tool_text",
]


class Candidate(BaseModel):
    """One ranked candidate: resource id, kind, lane score, 0-based rank."""

    model_config = ConfigDict(frozen=True, allow_inf_nan=False)

    resource_id: str
    kind: ResourceKind
    score: float
    rank: int

    @property
    def matched(self) -> bool:
        """Does the candidate share a term with the query (lane score > 0)?"""
        return self.score > 0


BM25_INDEX_CACHE_SIZE = 64
"""Corpora whose BM25 index ``bm25_scores`` keeps for the process (least recently used
dropped first): a suite's tasks share one document corpus, so its index is built once."""

_BM25_INDEXES: OrderedDict[str, tuple[bm25s.BM25 | None, dict[str, int]]] = OrderedDict()
_BM25_LOCK = threading.Lock()


def _corpus_key(documents: Sequence[str]) -> str:
    h = hashlib.sha256()
    for d in documents:
        data = d.encode("utf-8", "surrogatepass")
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def _bm25_index(documents: Sequence[str]) -> tuple[bm25s.BM25 | None, dict[str, int]]:
    """(index, vocabulary) of ``documents`` (None: no document has a token), built once per
    distinct corpus (keyed by the sha256 of the texts, in order) and kept for the process."""
    key = _corpus_key(documents)
    with _BM25_LOCK:
        hit = _BM25_INDEXES.get(key)
        if hit is not None:
            _BM25_INDEXES.move_to_end(key)
            return hit
    corpus_tokens = [lexical_tokens(d) for d in documents]
    built: tuple[bm25s.BM25 | None, dict[str, int]] = (None, {})
    if any(corpus_tokens):
        import bm25s

        # bm25s sets its logger to DEBUG when imported and logs every index build there; a
        # benchmark builds thousands
        logging.getLogger("bm25s").setLevel(logging.WARNING)
        retriever = bm25s.BM25()
        retriever.index(corpus_tokens, show_progress=False)
        built = (retriever, retriever.vocab_dict)
    with _BM25_LOCK:
        _BM25_INDEXES[key] = built
        while len(_BM25_INDEXES) > BM25_INDEX_CACHE_SIZE:
            _BM25_INDEXES.popitem(last=False)
    return built


def bm25_scores(query: str, documents: Sequence[str]) -> list[float]:
    """BM25 score of ``query`` against each of ``documents`` (shape: len(documents)),
    rounded to 6 decimals (bm25s's default parameters, k1 1.5, b 0.75, Lucene's idf).

    Query terms absent from every document contribute 0; an empty corpus gives ``[]``.
    The index of a corpus is built once per process (``BM25_INDEX_CACHE_SIZE`` corpora
    kept); scoring reads it only, so the scores are those of a fresh index.
    """
    if not documents:
        return []
    retriever, vocab = _bm25_index(documents)
    if retriever is None:
        return [0.0] * len(documents)
    query_tokens = [tok for tok in lexical_tokens(query) if tok in vocab]
    if not query_tokens:
        return [0.0] * len(documents)
    return [round(float(s), 6) for s in retriever.get_scores(query_tokens)]


def _rank(ids: Sequence[str], scores: Sequence[float], kind: ResourceKind, limit: int | None):
    order = sorted(range(len(ids)), key=lambda i: (-scores[i], ids[i]))
    if limit is not None:
        order = order[:limit]
    return [
        Candidate(resource_id=ids[i], kind=kind, score=scores[i], rank=r)
        for r, i in enumerate(order)
    ]


def context_text(context: ContextResource) -> str:
    """What a context lane ranks: its content and source kind."""
    return f"{context.content} {context.source.value}"


def tool_text(tool: ToolResource) -> str:
    """What a tool lane ranks: its description and rendered schema text."""
    return f"{tool.description} {tool.rendered_schema()}"


def _dense_scores(query: str, texts: Sequence[str]) -> list[float]:
    from junction.dense import dense_scores  # loads PyTorch: only where a dense lane runs

    return dense_scores(query, texts)


class _LaneGenerator:
    """A lane: ``score(query, texts)`` over each resource's ``text``, ranked by ``_rank``."""

    kind: ResourceKind
    text: Any
    score: Any

    def generate(self, query: str, resources: Sequence[Any],
                 limit: int | None = None) -> list[Candidate]:
        """Ranked candidates: descending score, then ascending id, cut to ``limit``."""
        scores = type(self).score(query, [type(self).text(r) for r in resources])
        return _rank([r.id for r in resources], scores, self.kind, limit)


class LexicalContextCandidateGenerator(_LaneGenerator):
    """BM25 over each context's content and source kind (``generate(query, contexts,
    limit)``)."""

    kind, text, score = "context", context_text, bm25_scores


class LexicalToolCandidateGenerator(_LaneGenerator):
    """BM25 over each tool's description and rendered schema text (``generate(query, tools,
    limit)``)."""

    kind, text, score = "tool", tool_text, bm25_scores


class DenseContextCandidateGenerator(_LaneGenerator):
    """Dense (MaxP cosine, ``junction.dense``) over each context's ``context_text``
    (``generate(query, contexts, limit)``). Raises ``junction.dense.DenseError`` when the
    embedder is missing or off its pin."""

    kind, text, score = "context", context_text, _dense_scores


class DenseToolCandidateGenerator(_LaneGenerator):
    """Dense (MaxP cosine, ``junction.dense``) over each tool's ``tool_text``
    (``generate(query, tools, limit)``). Raises ``junction.dense.DenseError`` when the
    embedder is missing or off its pin."""

    kind, text, score = "tool", tool_text, _dense_scores


RRF_K = 60
"""Reciprocal rank fusion's constant (Cormack, Clarke & Büttcher 2009, who chose 60)."""


def reciprocal_rank_fusion(lanes: Sequence[Sequence[Candidate]], kind: ResourceKind,
                           limit: int | None = None) -> list[Candidate]:
    """Merge whole ranked lanes of the same candidates by reciprocal rank fusion.

    score(c) = sum over lanes where c is a match (lane score > 0) of 1 / (``RRF_K`` + rank),
    rank 1-based; rounded to 9 decimals. Ordered by descending score, then ascending id, cut
    to ``limit``. Raises ``ValueError`` if the lanes do not hold the same resource ids.
    """
    ids = sorted({c.resource_id for c in lanes[0]}) if lanes else []
    fused = dict.fromkeys(ids, 0.0)
    for lane in lanes:
        if sorted(c.resource_id for c in lane) != ids:
            raise ValueError("reciprocal_rank_fusion needs whole lanes over the same candidates")
        for c in lane:
            if c.matched:
                fused[c.resource_id] += 1.0 / (RRF_K + c.rank + 1)
    return _rank(ids, [round(fused[i], 9) for i in ids], kind, limit)


Lanes = tuple[list["Candidate"], list["Candidate"]]


@dataclass(frozen=True)
class PoolRuleInfo:
    """One pool rule: ``description`` says what its candidate pools are; ``lanes``
    (``"module:function"`` or a callable) ranks them:
    ``lanes(query, contexts, tools, context_limit, tool_limit) -> (context lane, tool
    lane)``, each lane a list of ``Candidate`` ranked 0.., cut to its limit (None: whole)."""

    name: str
    description: str
    lanes: str | Callable[..., Lanes]


POOL_RULES: Catalog[PoolRuleInfo] = Catalog("pool rule", entry_points=PLUGINS)
"""The pool rules (module docstring; ``junction.registry.Catalog``)."""


def register_pool_rule(info: PoolRuleInfo, *, replace: bool = False) -> None:
    """Add a pool rule under ``info.name``. A name already registered is replaced only with
    ``replace=True`` (a plug-in's replacement is recorded in the run);
    ``junction.registry.PluginError`` or ``ValueError`` otherwise
    (``junction.registry.Catalog.register``)."""
    POOL_RULES.register(info.name, info, replace=replace)

PoolLimit = int | tuple[int | None, int | None] | None
"""Candidates kept per lane: one limit for both lanes, a pair ``(contexts, tools)``, or
None (the whole lane)."""

DEFAULT_POOL_RULE = "bm25"
"""The default pool rule: the BM25 lanes every earlier run used."""



def check_pool_rule(rule: str) -> str:
    """``rule`` if it names a pool rule; else ``UnknownNameError`` listing them."""
    return POOL_RULES.get_record(rule).name


@dataclass(frozen=True)
class PoolRequest:
    """The candidate pools a selection asks for: ``limit`` per lane (``PoolLimit``) ranked
    by the pool rule ``rule`` (``POOL_RULES``). ``junction.evaluate.evaluate_batch`` hands
    every strategy the run's; ``with_rule`` gives a strategy that owns its rule its own."""

    limit: PoolLimit = None
    rule: str = DEFAULT_POOL_RULE

    def with_rule(self, rule: str | None) -> PoolRequest:
        """This request ranked by ``rule`` instead (None: unchanged)."""
        return self if rule is None or rule == self.rule else PoolRequest(self.limit, rule)

    @classmethod
    def of(cls, pool: PoolRequest | PoolLimit) -> PoolRequest:
        """``pool`` itself, or a bare limit as a request on ``DEFAULT_POOL_RULE``."""
        return pool if isinstance(pool, PoolRequest) else cls(pool)


def _lanes(rule: str, query: str, contexts: Sequence[ContextResource],
           tools: Sequence[ToolResource], context_limit: int | None,
           tool_limit: int | None) -> Lanes:
    return load(POOL_RULES.get_record(rule).lanes)(query, contexts, tools, context_limit,
                                                   tool_limit)


def _bm25_lanes(query: str, contexts: Sequence[ContextResource],
                tools: Sequence[ToolResource], context_limit: int | None,
                tool_limit: int | None) -> Lanes:
    """``bm25``: the BM25 lanes."""
    return (LexicalContextCandidateGenerator().generate(query, contexts, context_limit),
            LexicalToolCandidateGenerator().generate(query, tools, tool_limit))


def _dense_lanes(query: str, contexts: Sequence[ContextResource],
                 tools: Sequence[ToolResource], context_limit: int | None,
                 tool_limit: int | None) -> Lanes:
    """``dense``: the dense lanes."""
    return (DenseContextCandidateGenerator().generate(query, contexts, context_limit),
            DenseToolCandidateGenerator().generate(query, tools, tool_limit))


def _hybrid_lanes(query: str, contexts: Sequence[ContextResource],
                  tools: Sequence[ToolResource], context_limit: int | None,
                  tool_limit: int | None) -> Lanes:
    """``hybrid``: the whole BM25 and dense lanes merged by reciprocal rank fusion."""
    lexical = _bm25_lanes(query, contexts, tools, None, None)
    dense = _dense_lanes(query, contexts, tools, None, None)
    return (reciprocal_rank_fusion([lexical[0], dense[0]], "context", context_limit),
            reciprocal_rank_fusion([lexical[1], dense[1]], "tool", tool_limit))


def _named_lanes(query: str, contexts: Sequence[ContextResource],
                 tools: Sequence[ToolResource], context_limit: int | None,
                 tool_limit: int | None) -> Lanes:
    """``bm25_named`` (module docstring): the BM25 tool lane cut to ``tool_limit``; the
    whole BM25 context lane kept where a candidate is in the top ``context_limit`` or its
    content names a pooled tool, ranked again 0.. in the lane's order."""
    every, pooled = _bm25_lanes(query, contexts, tools, None, tool_limit)
    tool_ids = [c.resource_id for c in pooled]
    content = {c.id: c.content for c in contexts}
    kept = [c for c in every
            if context_limit is None or c.rank < context_limit
            or any(names_id(content[c.resource_id], t) for t in tool_ids)]
    return ([c.model_copy(update={"rank": r}) for r, c in enumerate(kept)], pooled)


def normalise_scores(candidates: Sequence[Candidate]) -> dict[str, float]:
    """Lane scores divided by the lane's best score, so unary utility lies in [0, 1].

    Max-normalisation keeps the lane's order and makes the two lanes' scales comparable
    (both top candidates get 1.0); a lane whose best score is 0 gives all zeros.
    """
    best = max((c.score for c in candidates), default=0.0)
    if best <= 0:
        return {c.resource_id: 0.0 for c in candidates}
    return {c.resource_id: round(c.score / best, 6) for c in candidates}


@dataclass(frozen=True)
class CandidatePools:
    """Ranked candidates of both lanes for one view."""

    contexts: list[Candidate]
    tools: list[Candidate]


def candidate_pools(view: RouterView, pool: PoolRequest | PoolLimit,
                    rule: str | None = None) -> CandidatePools:
    """Rank the view's contexts and tools against its objective and keep the request's
    limit each. ``pool``: a ``PoolRequest``, or a bare limit (a pair: ``(context limit,
    tool limit)``; None: the whole lane) ranked by ``rule`` (None: ``DEFAULT_POOL_RULE``);
    ``rule`` given with a request overrides its rule. Raises ``UnknownNameError`` for an
    unknown rule and ``junction.dense.DenseError`` when a dense lane's model is missing."""
    request = PoolRequest.of(pool).with_rule(rule)
    limit = request.limit
    context_limit, tool_limit = (limit if isinstance(limit, (tuple, list)) else (limit, limit))
    contexts, tools = _lanes(request.rule, view.objective, view.contexts, view.tools,
                             context_limit, tool_limit)
    return CandidatePools(contexts=contexts, tools=tools)


for _info in (
    PoolRuleInfo("bm25", "BM25 lanes", _bm25_lanes),
    PoolRuleInfo("dense", "dense lanes (all-MiniLM-L6-v2, MaxP cosine)", _dense_lanes),
    PoolRuleInfo("bm25_named", "BM25 lanes; the context pool widened by every document "
                 "naming a pooled tool's id", _named_lanes),
    PoolRuleInfo("hybrid", f"BM25 and dense lanes merged by reciprocal rank fusion "
                 f"(k = {RRF_K})", _hybrid_lanes),
):
    register_pool_rule(_info)
