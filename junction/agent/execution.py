"""The executor interface, the deterministic toy executor and the verifiers.

An ``Executor`` plays the agent on an exposed set: ``execute(task, context_ids, tool_ids)
-> ExecutionResult``. ``ToyExecutor`` (below) is the scripted simulator of the toy suites;
``junction.agent.llm.LLMExecutor`` runs a local instruct model and reads only the task's router
view.

``execute(task, context_ids, tool_ids)`` plays the agent given an exposed set: for each step
of a verifier kind that grades calls (``junction.verifiers``: ``toy_calls``) it calls the
step's tool when the tool and every context the step requires are exposed, the step's
fallback tool when that is exposed instead (the wrong tool when the deciding policy is
missing), or the step's tool uninformed when only it is exposed. Other verifier kinds make
no calls: their outcome depends on the exposed set only.

``verify(task, result)`` compares a result with the task's verifier spec and says why it
failed, through the kind's function in the verifier catalog: one ``verify_<kind>`` below
per kind (``verify_toy`` is ``toy_calls``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from junction.tasks import BenchmarkTask
from junction.verifiers import verifier_info

__all__ = ["ToolCall", "ExecutionResult", "Executor", "ToyExecutor", "Outcome", "execute",
           "verify", "verify_toy", "verify_tools_exposed", "verify_tools_with_documents",
           "verify_no_tools", "verify_context_answer", "verify_contexts_exact",
           "normalise_answer"]


class ToolCall(BaseModel):
    """One tool call: 0-based ``index``, tool id, arguments."""

    model_config = ConfigDict(frozen=True, allow_inf_nan=False)

    index: int
    tool_id: str
    arguments: dict[str, Any] = {}


class ExecutionResult(BaseModel):
    """What the executor did with an exposed set.

    The toy executor fills the first three fields. A model executor also gives its
    ``text``, ``output_kind`` (``junction.agent.prompt.parse_output``: calls, empty, text,
    unparseable), the decoder's error, prompt/generated token counts (model tokens), the
    model's and the prompt's sha256, whether the generation came from the cache and its
    wall-clock milliseconds (``wall_ms``: timings only, never a trace field). A remote
    agent (``junction.agent.remote``) gives no model sha256 but ``remote``: the server's
    ``host[:port]/path`` and the model id it serves. ``dropped_context_ids``: exposed
    contexts the agent (embedded or remote) left out of its prompt to fit its context
    window (``junction.agent.prompt.fit_prompt``), oldest first.
    """

    model_config = ConfigDict(frozen=True, allow_inf_nan=False)

    context_ids: tuple[str, ...]
    tool_ids: tuple[str, ...]
    tool_calls: tuple[ToolCall, ...] = ()
    text: str | None = None
    output_kind: str | None = None
    decode_error: str = ""
    prompt_tokens: int | None = None
    generated_tokens: int | None = None
    model_sha256: str | None = None
    prompt_sha256: str | None = None
    cached: bool | None = None
    wall_ms: float | None = None
    remote: str | None = None
    dropped_context_ids: tuple[str, ...] = ()


class Executor(Protocol):
    """Plays the agent on an exposed set; ``name`` is recorded in the trace."""

    name: str

    def execute(self, task: BenchmarkTask, context_ids: Iterable[str],
                tool_ids: Iterable[str]) -> ExecutionResult:
        """What the agent did with the exposed contexts and tools."""
        ...


class Outcome(BaseModel):
    """Verified outcome: ``success`` and, on failure, a ``reason``."""

    model_config = ConfigDict(frozen=True)

    success: bool
    reason: str = ""


def execute(task: BenchmarkTask, context_ids: Iterable[str], tool_ids: Iterable[str]) -> ExecutionResult:
    """Run the toy agent on an exposed set (ids not in the task raise ``KeyError``)."""
    cs = tuple(sorted(context_ids))
    ts = tuple(sorted(tool_ids))
    for rid in cs:
        task.context(rid)
    for rid in ts:
        task.tool(rid)
    calls: list[ToolCall] = []
    if verifier_info(task.verifier.kind).grades == "calls":
        exposed_c, exposed_t = set(cs), set(ts)
        for step in task.verifier.params.get("steps", []):
            tool = step["tool"]
            requires = step.get("requires", [])
            fallback = step.get("fallback")
            informed = all(r in exposed_c for r in requires)
            if tool in exposed_t and informed:
                calls.append(ToolCall(index=len(calls), tool_id=tool, arguments={"informed": True}))
            elif fallback is not None and fallback in exposed_t:
                calls.append(ToolCall(index=len(calls), tool_id=fallback, arguments={"informed": False}))
            elif tool in exposed_t:
                calls.append(ToolCall(index=len(calls), tool_id=tool, arguments={"informed": False}))
    return ExecutionResult(context_ids=cs, tool_ids=ts, tool_calls=tuple(calls))


class ToyExecutor:
    """The deterministic toy executor as an ``Executor`` (``execute`` above)."""

    name = "toy"

    def execute(self, task: BenchmarkTask, context_ids: Iterable[str],
                tool_ids: Iterable[str]) -> ExecutionResult:
        """``execute(task, context_ids, tool_ids)``."""
        return execute(task, context_ids, tool_ids)


def verify_toy(task: BenchmarkTask, result: ExecutionResult) -> Outcome:
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


def verify_tools_exposed(task: BenchmarkTask, result: ExecutionResult) -> Outcome:
    """``tools_exposed``: every gold tool is exposed (no ``params``)."""
    missing = sorted(set(task.gold_tool_ids) - set(result.tool_ids))
    if missing:
        return Outcome(success=False, reason=f"gold tools not exposed: {missing}")
    return Outcome(success=True)


def verify_tools_with_documents(task: BenchmarkTask, result: ExecutionResult) -> Outcome:
    """``tools_with_documents``: every gold tool is exposed and, for the tool of each of the
    task's ``gold_pairs``, some exposed document of those pairs names it (reads no
    ``params``; τ's ``params["actions"]`` are the agent grader's, ``junction.agent.
    tau2_grading``)."""
    tools = verify_tools_exposed(task, result)
    if not tools.success:
        return tools
    exposed_c = set(result.context_ids)
    bare = sorted({p.tool_id for p in task.gold_pairs}
                  - {p.tool_id for p in task.gold_pairs if p.context_id in exposed_c})
    if bare:
        return Outcome(success=False, reason=f"no exposed document names gold tool(s) {bare}")
    return Outcome(success=True)


def verify_no_tools(task: BenchmarkTask, result: ExecutionResult) -> Outcome:
    """``no_tools``: no tool is exposed, abstention (no ``params``)."""
    if result.tool_ids:
        return Outcome(
            success=False, reason=f"{len(result.tool_ids)} tool(s) exposed, none fits"
        )
    return Outcome(success=True)


def normalise_answer(text: str) -> str:
    """Lower-case and collapse runs of whitespace to one space (for answer matching)."""
    return re.sub(r"\s+", " ", text).strip().lower()


def verify_context_answer(task: BenchmarkTask, result: ExecutionResult) -> Outcome:
    """``context_answer``: an exposed context contains one of ``params.answers``
    (``normalise_answer`` on both sides)."""
    answers = [normalise_answer(a) for a in task.verifier.params.get("answers", [])]
    for rid in result.context_ids:
        content = normalise_answer(task.context(rid).content)
        if any(a and a in content for a in answers):
            return Outcome(success=True)
    return Outcome(success=False, reason="no exposed context contains an accepted answer")


def verify_contexts_exact(task: BenchmarkTask, result: ExecutionResult) -> Outcome:
    """``contexts_exact``: the exposed contexts are exactly the gold contexts (no
    ``params``)."""
    extra = sorted(set(result.context_ids) - set(task.gold_context_ids))
    missing = sorted(set(task.gold_context_ids) - set(result.context_ids))
    if extra or missing:
        return Outcome(success=False, reason=f"wrongly admitted {extra}, wrongly rejected "
                                             f"{missing}")
    return Outcome(success=True)


def verify(task: BenchmarkTask, result: ExecutionResult) -> Outcome:
    """Verify a result against ``task.verifier``: the grading function of its kind in the
    verifier catalog (``junction.verifiers``; ``VerifierSpec`` accepts catalogued kinds
    only)."""
    return verifier_info(task.verifier.kind).grader()(task, result)
