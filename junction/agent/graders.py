"""The agent grader catalog: one record per way of grading what a model agent did.

A suite's verifier (``junction.verifiers``) grades the *exposed set* (the retrieval proxy,
``success``); an agent grader grades what a model *did* with it (``agent_success``). Each
``GraderInfo`` names the verifier kinds whose tasks it can grade, a predicate that says
whether it grades one task of such a kind (``applies``), the decoder that reads the
agent's answer into calls (``decode``), the function that grades, the outcomes it gives
(``outcomes``) and the measures it adds to every grade (``measures``:
``junction.agent.grade.Measure``; the trace's ``agent_measures`` and the report's
agent-measure table read them, whatever the grader). The prompt layout an agent gets is
the suite's (``junction.suites.SuiteInfo.prompt_layout``, chosen by the task's suite: the
agent reads the router view, which never holds the verifier).

A task is graded by the first record, in catalog order, whose ``kinds`` hold the task's
``verifier.kind`` and whose ``applies`` accepts it (``grader_for``); the same record's
decoder reads the agent's answer on that task (``decoder_for``). Adding a grader is one
``register_grader(GraderInfo(...))`` record plus one module with ``applies(task) -> bool``
and ``grade(task, result) -> AgentGrade`` (named ``"module:function"``, imported on first
use, or given as callables), as strategies and verifiers are catalogued.

Records: ``bfcl`` (BFCL's own checkers, ``junction.agent.grading``) and ``tau2_actions``
(tau2's action matching on a single-turn answer, ``junction.agent.tau2_grading``); both
decode with BFCL's decoder (``junction.agent.prompt.parse_output``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from junction.agent.execution import ExecutionResult
from junction.agent.grade import AgentGrade, Measure
from junction.agent.prompt import PromptLayout
from junction.registry import PLUGINS, Catalog, load
from junction.suites import SUITES
from junction.tasks import BenchmarkTask

__all__ = [
    "AGENT_GRADERS",
    "DEFAULT_DECODER",
    "AgentGrade",
    "Decoder",
    "GraderInfo",
    "Measure",
    "agent_measures",
    "agent_outcomes",
    "decoder_for",
    "gradable",
    "grade_agent",
    "grader_for",
    "grader_info",
    "prompt_layout",
    "register_grader",
]


Decoder = Callable[[str, Sequence[str]], tuple[str, list[dict[str, Any]], str]]
"""An answer decoder: ``(text, exposed tool ids) -> (kind, calls, decode_error)``;
``kind`` is ``calls``, ``empty``, ``text`` or ``unparseable``, ``calls`` a list of
``{tool_id: arguments}`` (``junction.agent.prompt.parse_output`` is BFCL's)."""

DEFAULT_DECODER = "junction.agent.prompt:parse_output"
"""BFCL's decoder: the decoder of a grader that names none, and of a task no grader
grades."""


@dataclass(frozen=True)
class GraderInfo:
    """One agent grader.

    ``kinds``: the verifier kinds (``VerifierSpec.kind``) of the tasks it may grade;
    ``applies``: ``"module:function"`` or a callable ``(task) -> bool`` saying whether it
    grades a task of such a kind (a BFCL category, a task with gold agent actions);
    ``check``: ``"module:function"`` or a callable ``(task, ExecutionResult) ->
    AgentGrade``; ``outcomes``: every ``agent_outcome`` it gives -> its meaning in one
    line; ``decode``: ``"module:function"`` or a ``Decoder`` that reads the agent's answer
    (default BFCL's, ``DEFAULT_DECODER``); ``measures``: the ``Measure`` records every grade
    it gives carries a value for (``AgentGrade.measures``); ``report_note``: what a
    reader of the report must know about how this grader grades (printed under the
    agent-measure table, ``junction.evidence.agent_measures``); ``description``: what
    grades, in a few words with its source (a report's Definitions print it for each
    suite whose rows it graded; "" names the grader alone). A report says nothing of a
    grader beyond its record.

    Raises ``ValueError`` when two measures share a name.
    """

    name: str
    kinds: tuple[str, ...]
    applies: str | Callable[..., bool]
    check: str | Callable[..., AgentGrade]
    outcomes: dict[str, str]
    decode: str | Decoder = DEFAULT_DECODER
    measures: tuple[Measure, ...] = ()
    report_note: str = ""
    description: str = ""

    def __post_init__(self) -> None:
        names = [m.name for m in self.measures]
        if len(set(names)) != len(names):
            raise ValueError(f"grader {self.name!r}: measures {names} repeat a name")

    def grades(self, task: BenchmarkTask) -> bool:
        """Whether this grader grades ``task`` (its kind is one of ``kinds`` and
        ``applies`` accepts it)."""
        return task.verifier.kind in self.kinds and bool(load(self.applies)(task))

    def grader(self) -> Callable[..., AgentGrade]:
        """The grading function (``check``, imported when it is a ``"module:function"``)."""
        return load(self.check)

    def decoder(self) -> Decoder:
        """The answer decoder (``decode``, imported when it is a ``"module:function"``)."""
        return load(self.decode)

    def grade(self, task: BenchmarkTask, result: ExecutionResult) -> AgentGrade:
        """Grade ``result`` on ``task`` with ``check``. Raises ``ValueError`` naming the
        grader and the task when the grade's measures are not exactly the declared ones,
        and what ``check`` raises."""
        grade = self.grader()(task, result)
        declared = {m.name for m in self.measures}
        if set(grade.measures) != declared:
            raise ValueError(
                f"grader {self.name!r} on task {task.task_id!r}: the grade's measures "
                f"{sorted(grade.measures)} are not the declared {sorted(declared)}")
        return grade


AGENT_GRADERS: Catalog[GraderInfo] = Catalog("agent grader", entry_points=PLUGINS)
"""The agent graders (``junction.registry.Catalog``)."""


def register_grader(info: GraderInfo, *, replace: bool = False) -> None:
    """Add a grader to the catalog under ``info.name``. A name already registered is replaced
    only with ``replace=True`` (a plug-in's replacement is recorded in the run);
    ``junction.registry.PluginError`` or ``ValueError`` otherwise
    (``junction.registry.Catalog.register``)."""
    AGENT_GRADERS.register(info.name, info, replace=replace)


def grader_info(name: str) -> GraderInfo:
    """The record for ``name``; ``UnknownNameError`` listing the graders otherwise."""
    return AGENT_GRADERS.get_record(name)


def grader_for(task: BenchmarkTask) -> GraderInfo | None:
    """The grader of ``task`` (module docstring), or None when no grader grades it."""
    for info in AGENT_GRADERS.values():
        if info.grades(task):
            return info
    return None


def gradable(task: BenchmarkTask) -> bool:
    """Whether some grader of the catalog grades ``task`` (the agent acts only there)."""
    return grader_for(task) is not None


def grade_agent(task: BenchmarkTask, result: ExecutionResult) -> AgentGrade:
    """Grade a model executor's ``result`` on ``task`` with the task's grader
    (``grader_for``); returns its ``AgentGrade``. Raises ``ValueError`` naming the task when
    no grader grades it, and what the grader raises (a result without model output)."""
    info = grader_for(task)
    if info is None:
        raise ValueError(f"task {task.task_id!r}: no agent grader grades verifier kind "
                         f"{task.verifier.kind!r} here")
    return info.grade(task, result)


def decoder_for(task: BenchmarkTask) -> Decoder:
    """The answer decoder of ``task``'s grader (``grader_for``); BFCL's where no grader
    grades it."""
    info = grader_for(task)
    return load(DEFAULT_DECODER) if info is None else info.decoder()


def agent_measures() -> dict[str, Measure]:
    """Every measure of every grader, by name (the first grader's record where two
    declare one name)."""
    out: dict[str, Measure] = {}
    for info in AGENT_GRADERS.values():
        for measure in info.measures:
            out.setdefault(measure.name, measure)
    return out


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
    from junction.agent.tau2_grading import TAU2_MEASURES, TAU2_OUTCOMES, TAU2_REPORT_NOTE

    register_grader(GraderInfo(
        "bfcl", ("tools_exposed", "no_tools", "context_answer"),
        "junction.agent.grading:bfcl_gradable", "junction.agent.grading:grade_bfcl",
        AGENT_OUTCOMES,
        description="BFCL's own checker: calls, abstention on irrelevance, the answer on "
                    "memory (BFCL's ast_checker and agentic_checker)"))
    register_grader(GraderInfo(
        "tau2_actions", ("tools_with_documents",),
        "junction.agent.tau2_grading:tau2_gradable",
        "junction.agent.tau2_grading:grade_tau2",
        TAU2_OUTCOMES, measures=TAU2_MEASURES, report_note=TAU2_REPORT_NOTE,
        description="tau2's action check: each gold agent action met by a call "
                    "(tau2's Action.compare_with_tool_call)"))


_register_builtins()
