"""The executor interface and the deterministic toy executor.

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

``junction.verifiers.verify(task, result)`` compares a result with the task's verifier
spec and says why it failed (the verifiers live beside their catalog there).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from junction.tasks import BenchmarkTask
from junction.verifiers import verifier_info

__all__ = ["ExecutionResult", "Executor", "ToolCall", "ToyExecutor", "execute"]


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


def execute(task: BenchmarkTask, context_ids: Iterable[str],
            tool_ids: Iterable[str]) -> ExecutionResult:
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
                calls.append(ToolCall(index=len(calls), tool_id=tool,
                                      arguments={"informed": True}))
            elif fallback is not None and fallback in exposed_t:
                calls.append(ToolCall(index=len(calls), tool_id=fallback,
                                      arguments={"informed": False}))
            elif tool in exposed_t:
                calls.append(ToolCall(index=len(calls), tool_id=tool,
                                      arguments={"informed": False}))
    return ExecutionResult(context_ids=cs, tool_ids=ts, tool_calls=tuple(calls))


class ToyExecutor:
    """The deterministic toy executor as an ``Executor`` (``execute`` above)."""

    name = "toy"

    def execute(self, task: BenchmarkTask, context_ids: Iterable[str],
                tool_ids: Iterable[str]) -> ExecutionResult:
        """``execute(task, context_ids, tool_ids)``."""
        return execute(task, context_ids, tool_ids)
