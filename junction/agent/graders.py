"""The agent grader catalog: one record per way of grading what a model agent did.

A suite's verifier (``junction.verifiers``) grades the *exposed set* (the retrieval proxy,
``success``); an agent grader grades what a model *did* with it (``agent_success``). Each
``GraderInfo`` names the verifier kinds whose tasks it can grade, a predicate that says
whether it grades one task of such a kind (``gradable``), the function that grades, the
outcomes it gives (``outcomes``: the report's definitions read them). The prompt layout an
agent gets is the suite's (``junction.suites.SuiteInfo.prompt_layout``, chosen by the
task's suite: the agent reads the router view, which never holds the verifier).

A task is graded by the first record, in catalog order, whose ``kinds`` hold the task's
``verifier.kind`` and whose ``gradable`` accepts it (``grader_for``). Adding a grader is
one ``register_grader(GraderInfo(...))`` record plus one module with two functions
``gradable(task) -> bool`` and ``grade(task, result) -> AgentGrade`` (named
``"module:function"``, imported on first use), as strategies and verifiers are catalogued.

Records: ``bfcl`` (BFCL's own checkers, ``junction.agent.grading``) and ``tau2_actions``
(tau2's action matching on a single-turn answer, ``junction.agent.tau2_grading``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from junction.agent.prompt import PromptLayout
from junction.registry import PLUGINS, Catalog, load
from junction.suites import SUITES

__all__ = [
    "AGENT_GRADERS",
    "GraderInfo",
    "agent_outcomes",
    "gradable",
    "grade_agent",
    "grader_for",
    "grader_info",
    "prompt_layout",
    "register_grader",
]


@dataclass(frozen=True)
class GraderInfo:
    """One agent grader.

    ``kinds``: the verifier kinds (``VerifierSpec.kind``) of the tasks it may grade;
    ``applies``: ``"module:function"`` or a callable ``(task) -> bool`` saying whether it
    grades a task of such a kind (a BFCL category, a task with gold agent actions);
    ``check``: ``"module:function"`` or a callable ``(task, ExecutionResult) ->
    AgentGrade``; ``outcomes``: every ``agent_outcome`` it gives -> its meaning in one
    line.
    """

    name: str
    kinds: tuple[str, ...]
    applies: str | Callable[..., bool]
    check: str | Callable[..., Any]
    outcomes: dict[str, str]

    def gradable(self, task: Any) -> bool:
        """Whether this grader grades ``task`` (its kind is one of ``kinds`` and
        ``applies`` accepts it)."""
        return task.verifier.kind in self.kinds and bool(load(self.applies)(task))

    def grader(self) -> Callable[..., Any]:
        """The grading function (``check``, imported when it is a ``"module:function"``)."""
        return load(self.check)


AGENT_GRADERS: Catalog[GraderInfo] = Catalog("agent grader", entry_points=PLUGINS)
"""The agent graders (``junction.registry.Catalog``)."""


def register_grader(info: GraderInfo) -> None:
    """Add a grader to the catalog (a later record of a name replaces it)."""
    AGENT_GRADERS.register(info.name, info)


def grader_info(name: str) -> GraderInfo:
    """The record for ``name``; ``UnknownNameError`` listing the graders otherwise."""
    return AGENT_GRADERS.get_record(name)


def grader_for(task: Any) -> GraderInfo | None:
    """The grader of ``task`` (module docstring), or None when no grader grades it."""
    for info in AGENT_GRADERS.values():
        if info.gradable(task):
            return info
    return None


def gradable(task: Any) -> bool:
    """Whether some grader of the catalog grades ``task`` (the agent acts only there)."""
    return grader_for(task) is not None


def grade_agent(task: Any, result: Any) -> Any:
    """Grade a model executor's ``result`` on ``task`` with the task's grader
    (``grader_for``); returns its ``AgentGrade``. Raises ``ValueError`` naming the task when
    no grader grades it, and what the grader raises (a result without model output)."""
    info = grader_for(task)
    if info is None:
        raise ValueError(f"task {task.task_id!r}: no agent grader grades verifier kind "
                         f"{task.verifier.kind!r} here")
    return info.grader()(task, result)


def agent_outcomes() -> dict[str, str]:
    """Every ``agent_outcome`` of every grader -> its meaning (the first grader's words
    where two share an outcome)."""
    out: dict[str, str] = {}
    for info in AGENT_GRADERS.values():
        for key, meaning in info.outcomes.items():
            out.setdefault(key, meaning)
    return out


def prompt_layout(suite: str) -> PromptLayout | None:
    """The prompt layout ``suite``'s record names (``SuiteInfo.prompt_layout``); None:
    BFCL's layout (as for a suite the catalog lacks: a suite file)."""
    info = SUITES.get(suite)
    return None if info is None or info.prompt_layout is None else load(info.prompt_layout)


def _register_builtins() -> None:
    from junction.agent.grading import AGENT_OUTCOMES
    from junction.agent.tau2_grading import TAU2_OUTCOMES

    register_grader(GraderInfo(
        "bfcl", ("tools_exposed", "no_tools", "context_answer"),
        "junction.agent.grading:gradable", "junction.agent.grading:grade_agent",
        AGENT_OUTCOMES))
    register_grader(GraderInfo(
        "tau2_actions", ("tools_with_documents",),
        "junction.agent.tau2_grading:gradable", "junction.agent.tau2_grading:grade",
        TAU2_OUTCOMES))


_register_builtins()
