"""Admission policies: which judged candidates enter the shared budget.

Inputs are judge scores (logits, logit("yes") - logit("no"); comparable only within one
query and one instruction) attached to resources. Policies:

- ``admit_top_k``: best first, at most ``k``, each admitted only if the set still fits the
  budget (``Budget.check``: every limit); a candidate that would break a limit is skipped
  and the next one is tried. It is the one top-K rule: the page strategies call it on
  their contexts and ``chunk_admission.admit_chunks`` (``junction admit``) on a page's chunks.
- ``calibrate_floor`` / ``admit_above_floor``: a score floor chosen on a calibration split
  for a target precision (the lowest threshold whose precision reaches the target, which
  maximises recall at that precision); candidates below it are rejected, and when nothing
  passes, the best rejected candidates are returned separately so a caller can show them.
- ``exploit_scores``: for a sub-query, a candidate's score is
  min(score against the sub-query, score against the original objective), so a sub-query
  cannot admit what the objective rejects.
- ``admit_subtasks``: a proposed sub-task is admitted when it follows from the objective
  (score >= ``follow_floor``) and is not an echo of an ancestor task (every ancestor score
  < ``echo_floor``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from junction.budget import Budget
from junction.errors import JunctionError
from junction.resources import ContextResource, ToolResource

__all__ = [
    "DEFAULT_TOKEN_BUDGET",
    "DEFAULT_TOP_K",
    "AdmissionError",
    "AdmissionResult",
    "FloorCalibration",
    "Rejection",
    "ScoredResource",
    "SubtaskDecision",
    "admission_order",
    "admit_above_floor",
    "admit_subtasks",
    "admit_top_k",
    "calibrate_floor",
    "exploit_scores",
    "reject_degenerate",
    "tie_groups",
]

Resource = ContextResource | ToolResource

DEFAULT_TOP_K = 5
"""Chunks admitted per page by default: five chunks of at most
``DEFAULT_MAX_CHUNK_TOKENS`` (400) always fit ``DEFAULT_TOKEN_BUDGET`` (docs/suites.md, "Pages")."""
DEFAULT_TOKEN_BUDGET = 2048
"""Tokens admitted per page by default (docs/suites.md, "Pages")."""


class AdmissionError(JunctionError, ValueError):
    """An admission policy was given invalid input; the message names the argument and value."""


@dataclass(frozen=True)
class ScoredResource:
    """A candidate resource with its judge score (logits)."""

    resource: Resource
    score: float

    @property
    def resource_id(self) -> str:
        return self.resource.id


@dataclass(frozen=True)
class Rejection:
    """A candidate not admitted and why: ``below_floor``, ``top_k``, or ``budget:<limit>``."""

    item: ScoredResource
    reason: str


@dataclass(frozen=True)
class AdmissionResult:
    """Admitted candidates (best first), rejections (best first) and, when nothing was
    admitted because nothing passed the floor, the best rejected candidates (``best_rejected``,
    at most ``n_best_rejected`` of them)."""

    admitted: list[ScoredResource]
    rejected: list[Rejection] = field(default_factory=list)
    best_rejected: list[ScoredResource] = field(default_factory=list)

    @property
    def admitted_ids(self) -> list[str]:
        return [s.resource_id for s in self.admitted]


@dataclass(frozen=True)
class FloorCalibration:
    """A calibrated floor (logits) and what it achieved on the calibration split."""

    floor: float
    target_precision: float
    precision: float
    recall: float
    n_pairs: int
    n_positive: int


def tie_groups(items: Sequence[ScoredResource],
               tie_logits: float = 0.0) -> list[list[ScoredResource]]:
    """``items`` in admission order, grouped into ties.

    Walking the scores from the best down, a candidate within ``tie_logits`` (the judge's
    noise floor, logits) of its group's best score joins that group; otherwise it starts
    the next one. Within a group the stable rule orders candidates: smaller resource id
    first (the selectors' tie rule). ``tie_logits=0`` ties exactly equal scores only.
    Raises ``AdmissionError`` on a non-finite score or a negative ``tie_logits``.
    """
    if not (math.isfinite(tie_logits) and tie_logits >= 0):
        raise AdmissionError(f"tie_logits must be finite and >= 0, got {tie_logits!r}")
    for item in items:
        if not math.isfinite(item.score):
            raise AdmissionError(f"score of {item.resource_id!r} must be finite, "
                                 f"got {item.score!r}")
    groups: list[list[ScoredResource]] = []
    for item in sorted(items, key=lambda s: (-s.score, s.resource_id)):
        if groups and groups[-1][0].score - item.score <= tie_logits:
            groups[-1].append(item)
        else:
            groups.append([item])
    return [sorted(g, key=lambda s: s.resource_id) for g in groups]


def admission_order(items: Sequence[ScoredResource],
                    tie_logits: float = 0.0) -> list[ScoredResource]:
    """``items`` best first, ties within ``tie_logits`` in id order (``tie_groups``)."""
    return [item for group in tie_groups(items, tie_logits) for item in group]


def reject_degenerate(items: Sequence[ScoredResource], tie_logits: float = 0.0) -> AdmissionResult:
    """Nothing admitted: scores that tell nothing apart (a degenerate judge batch) admit
    nothing; every candidate is rejected as ``degenerate``, in admission order."""
    return AdmissionResult(admitted=[], rejected=[
        Rejection(i, "degenerate") for i in admission_order(items, tie_logits)])


def _split(resources: Sequence[Resource]) -> tuple[list[ContextResource], list[ToolResource]]:
    contexts = [r for r in resources if isinstance(r, ContextResource)]
    tools = [r for r in resources if isinstance(r, ToolResource)]
    return contexts, tools


def admit_top_k(
    items: Sequence[ScoredResource],
    budget: Budget,
    k: int | None = None,
    already: Sequence[Resource] = (),
    tie_logits: float = 0.0,
) -> AdmissionResult:
    """Top-``k`` within budget: best score first (ties, within ``tie_logits``: smaller id
    first; ``tie_groups``).

    ``already`` are resources admitted earlier that count against the budget (for example
    the other lane's picks). ``k=None`` means no count limit. Raises ``AdmissionError`` on
    ``k < 0`` or a non-finite score.
    """
    if k is not None and k < 0:
        raise AdmissionError(f"k must be >= 0 or None, got {k}")
    chosen: list[Resource] = list(already)
    admitted: list[ScoredResource] = []
    rejected: list[Rejection] = []
    for item in admission_order(items, tie_logits):
        if k is not None and len(admitted) >= k:
            rejected.append(Rejection(item, "top_k"))
            continue
        check = budget.check(*_split([*chosen, item.resource]))
        if not check.fits:
            rejected.append(Rejection(item, "budget:" + ",".join(check.failed)))
            continue
        chosen.append(item.resource)
        admitted.append(item)
    return AdmissionResult(admitted=admitted, rejected=rejected)


def calibrate_floor(
    scores: Sequence[float], labels: Sequence[bool], target_precision: float
) -> FloorCalibration:
    """The lowest score threshold t with precision({score >= t}) >= ``target_precision``.

    ``scores`` (logits) and ``labels`` (True = gold) are one calibration split, pooled over
    its queries. Among thresholds reaching the target the lowest maximises recall.
    Raises ``AdmissionError`` when lengths differ, the split has no positive label, the
    target is outside (0, 1], or no threshold reaches the target (the message gives the
    best precision reached).
    """
    if len(scores) != len(labels):
        raise AdmissionError(f"scores and labels differ in length: {len(scores)} != {len(labels)}")
    if not 0.0 < target_precision <= 1.0:
        raise AdmissionError(f"target_precision must be in (0, 1], got {target_precision!r}")
    n_pos = sum(bool(x) for x in labels)
    if n_pos == 0:
        raise AdmissionError(f"calibration split of {len(scores)} pairs has no positive label")
    pairs = sorted(zip(scores, labels, strict=True), key=lambda p: -p[0])
    best: FloorCalibration | None = None
    best_precision = 0.0
    tp = 0
    for i, (score, label) in enumerate(pairs):
        tp += bool(label)
        if i + 1 < len(pairs) and pairs[i + 1][0] == score:
            continue  # a threshold admits every tied score at once
        precision = tp / (i + 1)
        best_precision = max(best_precision, precision)
        if precision >= target_precision:
            best = FloorCalibration(float(score), target_precision, precision, tp / n_pos,
                                    len(pairs), n_pos)
    if best is None:
        raise AdmissionError(
            f"no floor reaches precision {target_precision}; best precision on the "
            f"{len(pairs)}-pair calibration split is {best_precision:.3f}"
        )
    return best


def admit_above_floor(
    items: Sequence[ScoredResource],
    floor: float,
    budget: Budget,
    k: int | None = None,
    already: Sequence[Resource] = (),
    n_best_rejected: int = 3,
    tie_logits: float = 0.0,
) -> AdmissionResult:
    """Admit candidates with score >= ``floor`` (logits), then top-``k`` within budget.

    Candidates below the floor are rejected with reason ``below_floor``. When none passes,
    ``best_rejected`` holds the ``n_best_rejected`` best of them (best first) so a caller
    can report or fall back explicitly; they are never admitted here. Candidates within
    ``tie_logits`` of each other are tied (``tie_groups``): the stable rule orders them.
    """
    ordered = admission_order(items, tie_logits)
    passing = [s for s in ordered if s.score >= floor]
    below = [Rejection(s, "below_floor") for s in ordered if s.score < floor]
    result = admit_top_k(passing, budget, k=k, already=already, tie_logits=tie_logits)
    rank = {s.resource_id: i for i, s in enumerate(ordered)}
    rejected = sorted([*result.rejected, *below], key=lambda r: rank[r.item.resource_id])
    best_rejected = [r.item for r in below[:n_best_rejected]] if not passing else []
    return AdmissionResult(admitted=result.admitted, rejected=rejected, best_rejected=best_rejected)


def exploit_scores(
    subquery_scores: Mapping[str, float], objective_scores: Mapping[str, float]
) -> dict[str, float]:
    """Per resource id: min(score against the sub-query, score against the objective).

    Raises ``AdmissionError`` naming the ids scored against one query but not the other.
    """
    missing = sorted(set(subquery_scores) ^ set(objective_scores))
    if missing:
        raise AdmissionError(f"ids scored against only one query: {', '.join(missing)}")
    return {rid: min(subquery_scores[rid], objective_scores[rid])
            for rid in sorted(subquery_scores)}


@dataclass(frozen=True)
class SubtaskDecision:
    """One proposed sub-task: ``follows`` (score vs the objective, logits), ``echo`` (the
    highest score vs any ancestor task; -inf without ancestors) and the decision."""

    subtask: str
    follows: float
    echo: float
    admitted: bool
    reason: str


ScoreFn = Callable[[str, Sequence[str]], Sequence[float]]
"""``score(query, documents) -> scores`` (one logit gap per document)."""


def admit_subtasks(
    proposals: Sequence[str],
    objective: str,
    ancestors: Sequence[str],
    follows_score: ScoreFn,
    echo_score: ScoreFn,
    follow_floor: float,
    echo_floor: float,
) -> list[SubtaskDecision]:
    """Decide each proposed sub-task (rule in the module docstring).

    ``follows_score`` scores sub-tasks as documents against the objective as query (the
    "does it follow?" instruction); ``echo_score`` scores each sub-task as query against the
    ancestor tasks as documents (the "is it the same task?" instruction). Reasons:
    ``admitted``, ``does_not_follow``, ``echo``. Floors are logits, calibrated by the caller.
    """
    follows = list(follows_score(objective, list(proposals))) if proposals else []
    decisions = []
    for text, follow in zip(proposals, follows, strict=True):
        echo = max(echo_score(text, list(ancestors)), default=-math.inf) if ancestors else -math.inf
        if follow < follow_floor:
            reason = "does_not_follow"
        elif echo >= echo_floor:
            reason = "echo"
        else:
            reason = "admitted"
        decisions.append(SubtaskDecision(text, float(follow), float(echo), reason == "admitted",
                                         reason))
    return decisions
