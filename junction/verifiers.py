"""The verifiers and their catalog: one record per verifier kind, as the strategy catalog
is for strategies, beside the function that grades it.

A ``VerifierInfo`` says what a verifier kind *is*: its name (``VerifierSpec.kind``), what
verified success means under it in one line (the report's Definitions read it), the
function that grades an outcome, and what that function grades: the exposed set alone, or
the tool calls an executor made with it. ``junction.tasks.VerifierSpec`` accepts only
catalogued kinds, ``verify`` (below) calls the kind's function and the toy executor
(``junction.agent.execution``) plays a spec's steps only for a kind that grades calls.

Every verifying function takes ``(task, result)``: a ``junction.tasks.BenchmarkTask`` and a
``junction.agent.execution.ExecutionResult`` (annotated with the protocols ``VerifiedTask``
and ``VerifiedResult``, what it reads of them: this module sits below the tasks and the
executors it grades, ``tests/test_layout.py`` LAYERS), and returns an ``Outcome``.

Adding a kind is one ``register_verifier(VerifierInfo(...))`` record plus one such
function, here or named ``"module:function"`` (imported on first use).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict

from junction.registry import PLUGINS, Catalog, load
from junction.resources import ContextResource

__all__ = [
    "VERIFIERS",
    "Grades",
    "Outcome",
    "VerifiedResult",
    "VerifiedTask",
    "VerifierInfo",
    "cheapest_success_set",
    "normalise_answer",
    "register_verifier",
    "verifier_info",
    "verifier_meaning",
    "verifier_names",
    "verify",
    "verify_context_answer",
    "verify_contexts_exact",
    "verify_no_tools",
    "verify_tools_exposed",
    "verify_tools_with_documents",
    "verify_toy",
]

Grades = Literal["exposure", "calls"]
"""``exposure``: the outcome is a function of the exposed set alone (the toy executor makes
no call); ``calls``: the verifier grades the tool calls an executor made (the toy executor
plays the spec's ``params.steps``)."""


class _Spec(Protocol):
    @property
    def kind(self) -> str: ...
    @property
    def params(self) -> dict[str, Any]: ...


class _Pair(Protocol):
    @property
    def context_id(self) -> str: ...
    @property
    def tool_id(self) -> str: ...


class _Call(Protocol):
    @property
    def tool_id(self) -> str: ...
    @property
    def arguments(self) -> dict[str, Any]: ...


class VerifiedTask(Protocol):
    """What a verifier reads of a ``junction.tasks.BenchmarkTask``: its ``VerifierSpec``
    (``kind``, ``params``), its gold ids and pairs, and its contexts by id."""

    @property
    def verifier(self) -> _Spec: ...
    @property
    def gold_context_ids(self) -> tuple[str, ...]: ...
    @property
    def gold_tool_ids(self) -> tuple[str, ...]: ...
    @property
    def gold_pairs(self) -> tuple[_Pair, ...]: ...
    def context(self, resource_id: str) -> ContextResource: ...


class VerifiedResult(Protocol):
    """What a verifier reads of a ``junction.agent.execution.ExecutionResult``: the
    exposed ids and the tool calls made."""

    @property
    def context_ids(self) -> tuple[str, ...]: ...
    @property
    def tool_ids(self) -> tuple[str, ...]: ...
    @property
    def tool_calls(self) -> tuple[_Call, ...]: ...


@dataclass(frozen=True)
class VerifierInfo:
    """One verifier kind: its name, what success means, and the function that grades it.

    ``check``: ``"module:function"`` (imported on first use) or a callable
    ``(task, result) -> Outcome`` (module docstring); its docstring
    says which ``VerifierSpec.params`` it reads. ``meaning``: verified success under this
    kind, one line that completes "success when ..." (reports print it). ``grades``: see
    ``Grades``.
    """

    name: str
    meaning: str
    check: str | Callable[..., Outcome]
    grades: Grades = "exposure"

    def grader(self) -> Callable[..., Outcome]:
        """The grading function (``check``, imported when it is a ``"module:function"``)."""
        return load(self.check)


VERIFIERS: Catalog[VerifierInfo] = Catalog("verifier kind", "kinds", entry_points=PLUGINS)
"""The verifier kinds (``junction.registry.Catalog``)."""


def register_verifier(info: VerifierInfo, *, replace: bool = False) -> None:
    """Add a verifier kind to the catalog under ``info.name``. A name already registered is
    replaced only with ``replace=True`` (a plug-in's replacement is recorded in the run);
    ``junction.registry.PluginError`` or ``ValueError`` otherwise
    (``junction.registry.Catalog.register``)."""
    VERIFIERS.register(info.name, info, replace=replace)


def verifier_names() -> list[str]:
    """Catalogued verifier kinds, sorted."""
    return sorted(VERIFIERS)


def verifier_info(name: str) -> VerifierInfo:
    """The record for ``name``; ``UnknownNameError`` listing the valid kinds otherwise."""
    return VERIFIERS.get_record(name)


def verifier_meaning(name: str) -> str:
    """``meaning`` of a catalogued kind; the name itself for one the catalog lacks (a run
    recorded by a build that had it)."""
    info = VERIFIERS.get(name)
    return info.meaning if info is not None else name


class Outcome(BaseModel):
    """Verified outcome: ``success`` and, on failure, a ``reason``."""

    model_config = ConfigDict(frozen=True)

    success: bool
    reason: str = ""


def verify_toy(task: VerifiedTask, result: VerifiedResult) -> Outcome:
    """``toy_calls``: each of ``params.steps`` (``{"tool", "requires", "fallback"}``) had its
    tool called, informed, in order, and no call more."""
    steps = task.verifier.params.get("steps", [])
    calls = list(result.tool_calls)
    for i, step in enumerate(steps):
        if i >= len(calls):
            return Outcome(success=False, reason=f"step {i}: tool {step['tool']!r} never called")
        call = calls[i]
        if call.tool_id != step["tool"]:
            return Outcome(
                success=False,
                reason=f"step {i}: called {call.tool_id!r} instead of {step['tool']!r}",
            )
        if not call.arguments.get("informed", False):
            missing = sorted(set(step.get("requires", [])) - set(result.context_ids))
            return Outcome(
                success=False,
                reason=f"step {i}: called {call.tool_id!r} without context {missing}",
            )
    if len(calls) > len(steps):
        return Outcome(success=False, reason=f"{len(calls) - len(steps)} unexpected tool call(s)")
    return Outcome(success=True)


def verify_tools_exposed(task: VerifiedTask, result: VerifiedResult) -> Outcome:
    """``tools_exposed``: every gold tool is exposed (no ``params``)."""
    missing = sorted(set(task.gold_tool_ids) - set(result.tool_ids))
    if missing:
        return Outcome(success=False, reason=f"gold tools not exposed: {missing}")
    return Outcome(success=True)


def verify_tools_with_documents(task: VerifiedTask, result: VerifiedResult) -> Outcome:
    """``tools_with_documents``: every gold tool is exposed and, for the tool of each of the
    task's ``gold_pairs``, some exposed document of those pairs names it (reads no
    ``params``; τ's ``params["actions"]`` are the agent grader's, ``junction.agent.
    tau2_grading``). A task without a gold tool has nothing to pair: it is graded on what it
    does need, every gold context (τ: its required documents) exposed."""
    if not task.gold_tool_ids:
        missing = sorted(set(task.gold_context_ids) - set(result.context_ids))
        if missing:
            return Outcome(success=False, reason=f"no gold tool; required documents not "
                                                  f"exposed: {missing}")
        return Outcome(success=True)
    tools = verify_tools_exposed(task, result)
    if not tools.success:
        return tools
    exposed_c = set(result.context_ids)
    bare = sorted({p.tool_id for p in task.gold_pairs}
                  - {p.tool_id for p in task.gold_pairs if p.context_id in exposed_c})
    if bare:
        return Outcome(success=False, reason=f"no exposed document names gold tool(s) {bare}")
    return Outcome(success=True)


def cheapest_success_set(task: VerifiedTask) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """The exposed set of fewest visible tokens that the task's verifier accepts, as
    (sorted context ids, sorted tool ids), for the kinds graded on gold exposure alone:
    ``tools_exposed`` (the gold tools), ``tools_with_documents`` (the gold tools and the
    cheapest set of gold-pair documents that names every paired tool; on a task without a
    gold tool, every gold context). None for every other kind.

    Exact: a dynamic programme over the subsets of paired tools (documents in id order, a
    subset kept only at its least cost), so 2^(paired tools) states per document; ties
    go to the sorted id tuple that comes first. It reads gold, so only references and
    grading call it, never a strategy.
    """
    kind = task.verifier.kind
    tools = tuple(sorted(set(task.gold_tool_ids)))
    if kind == "tools_exposed":
        return (), tools
    if kind != "tools_with_documents":
        return None
    if not tools:
        return tuple(sorted(set(task.gold_context_ids))), ()
    paired = sorted({p.tool_id for p in task.gold_pairs})
    bit = {t: 1 << i for i, t in enumerate(paired)}
    covers: dict[str, int] = {}
    for p in task.gold_pairs:
        covers[p.context_id] = covers.get(p.context_id, 0) | bit[p.tool_id]
    best: dict[int, tuple[int, tuple[str, ...]]] = {0: (0, ())}
    for doc in sorted(covers):
        cost = task.context(doc).token_cost
        for mask, (spent, chosen) in list(best.items()):
            grown = mask | covers[doc]
            if grown == mask:
                continue
            option = (spent + cost, tuple(sorted((*chosen, doc))))
            if grown not in best or option < best[grown]:
                best[grown] = option
    return best[(1 << len(paired)) - 1][1], tools


def verify_no_tools(task: VerifiedTask, result: VerifiedResult) -> Outcome:
    """``no_tools``: no tool is exposed, abstention (no ``params``)."""
    if result.tool_ids:
        return Outcome(
            success=False, reason=f"{len(result.tool_ids)} tool(s) exposed, none fits"
        )
    return Outcome(success=True)


def normalise_answer(text: str) -> str:
    """Lower-case and collapse runs of whitespace to one space (for answer matching)."""
    return re.sub(r"\s+", " ", text).strip().lower()


def verify_context_answer(task: VerifiedTask, result: VerifiedResult) -> Outcome:
    """``context_answer``: an exposed context contains one of ``params.answers``
    (``normalise_answer`` on both sides)."""
    answers = [normalise_answer(a) for a in task.verifier.params.get("answers", [])]
    for rid in result.context_ids:
        content = normalise_answer(task.context(rid).content)
        if any(a and a in content for a in answers):
            return Outcome(success=True)
    return Outcome(success=False, reason="no exposed context contains an accepted answer")


def verify_contexts_exact(task: VerifiedTask, result: VerifiedResult) -> Outcome:
    """``contexts_exact``: the exposed contexts are exactly the gold contexts (no
    ``params``)."""
    extra = sorted(set(result.context_ids) - set(task.gold_context_ids))
    missing = sorted(set(task.gold_context_ids) - set(result.context_ids))
    if extra or missing:
        return Outcome(success=False, reason=f"wrongly admitted {extra}, wrongly rejected "
                                             f"{missing}")
    return Outcome(success=True)


def verify(task: VerifiedTask, result: VerifiedResult) -> Outcome:
    """Verify a result against ``task.verifier``: the grading function of its kind in the
    verifier catalog (``junction.verifiers``; ``VerifierSpec`` accepts catalogued kinds
    only)."""
    return verifier_info(task.verifier.kind).grader()(task, result)


for _info in (
    VerifierInfo("toy_calls", "the toy executor called each step's tool with the contexts "
                 "that step requires exposed", verify_toy, grades="calls"),
    VerifierInfo("tools_exposed", "every gold tool is exposed", verify_tools_exposed),
    VerifierInfo("no_tools", "no tool is exposed (abstention: none of the candidates fits "
                 "the request)", verify_no_tools),
    VerifierInfo("context_answer", "an exposed context contains an accepted answer (case- "
                 "and whitespace-normalised)", verify_context_answer),
    VerifierInfo("contexts_exact", "the exposed contexts are exactly the gold contexts "
                 "(sub-task admission: every proposal admitted or rejected rightly)",
                 verify_contexts_exact),
    VerifierInfo("tools_with_documents", "every gold tool is exposed and, for each gold "
                 "pair's tool, at least one of its gold documents naming it is exposed (the "
                 "tool together with the document that makes it right); on a task without a "
                 "gold tool, every gold document is exposed",
                 verify_tools_with_documents),
):
    register_verifier(_info)
