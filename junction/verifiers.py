"""The verifier catalog: one record per verifier kind, as the strategy catalog is for strategies.

A ``VerifierInfo`` says what a verifier kind *is*: its name (``VerifierSpec.kind``), what
verified success means under it in one line (the report's Definitions read it), the
function that grades an outcome, and what that function grades: the exposed set alone, or
the tool calls an executor made with it. ``junction.tasks.VerifierSpec`` accepts only
catalogued kinds, ``junction.agent.execution.verify`` calls the kind's function and the toy
executor plays a spec's steps only for a kind that grades calls.

Adding a kind is one ``register_verifier(VerifierInfo(...))`` record plus one function
``(task: BenchmarkTask, result: ExecutionResult) -> Outcome``; the function is named
``"module:function"`` and imported on first use, since this module sits below the tasks
and the executors it grades (tests/test_layout.py::LAYERS).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from junction.errors import UnknownNameError

__all__ = ["Grades", "VERIFIERS", "VerifierInfo", "register_verifier", "verifier_info",
           "verifier_meaning", "verifier_names"]

Grades = Literal["exposure", "calls"]
"""``exposure``: the outcome is a function of the exposed set alone (the toy executor makes
no call); ``calls``: the verifier grades the tool calls an executor made (the toy executor
plays the spec's ``params.steps``)."""


@dataclass(frozen=True)
class VerifierInfo:
    """One verifier kind: its name, what success means, and the function that grades it.

    ``check``: ``"module:function"`` (imported on first use) or a callable
    ``(task, result) -> Outcome`` (``junction.agent.execution``'s types); its docstring
    says which ``VerifierSpec.params`` it reads. ``meaning``: verified success under this
    kind, one line that completes "success when ..." (reports print it). ``grades``: see
    ``Grades``.
    """

    name: str
    meaning: str
    check: str | Callable[..., Any]
    grades: Grades = "exposure"

    def grader(self) -> Callable[..., Any]:
        """The grading function (``check``, imported when it is a ``"module:function"``)."""
        check = self.check
        if isinstance(check, str):
            module, _, attr = check.partition(":")
            check = getattr(importlib.import_module(module), attr)
        return check


VERIFIERS: dict[str, VerifierInfo] = {}


def register_verifier(info: VerifierInfo) -> None:
    """Add a verifier kind to the catalog (a later record of a name replaces it)."""
    VERIFIERS[info.name] = info


def verifier_names() -> list[str]:
    """Catalogued verifier kinds, sorted."""
    return sorted(VERIFIERS)


def verifier_info(name: str) -> VerifierInfo:
    """The record for ``name``; ``UnknownNameError`` listing the valid kinds otherwise."""
    try:
        return VERIFIERS[name]
    except KeyError:
        raise UnknownNameError(
            f"unknown verifier kind {name!r}; valid kinds: {', '.join(verifier_names())}"
        ) from None


def verifier_meaning(name: str) -> str:
    """``meaning`` of a catalogued kind; the name itself for one the catalog lacks (a run
    recorded by a build that had it)."""
    info = VERIFIERS.get(name)
    return info.meaning if info is not None else name


_E = "junction.agent.execution:"
for _info in (
    VerifierInfo("toy_calls", "the toy executor called each step's tool with the contexts "
                 "that step requires exposed", _E + "verify_toy", grades="calls"),
    VerifierInfo("tools_exposed", "every gold tool is exposed", _E + "verify_tools_exposed"),
    VerifierInfo("no_tools", "no tool is exposed (abstention: none of the candidates fits "
                 "the request)", _E + "verify_no_tools"),
    VerifierInfo("context_answer", "an exposed context contains an accepted answer (case- "
                 "and whitespace-normalised)", _E + "verify_context_answer"),
    VerifierInfo("contexts_exact", "the exposed contexts are exactly the gold contexts "
                 "(sub-task admission: every proposal admitted or rejected rightly)",
                 _E + "verify_contexts_exact"),
    VerifierInfo("tools_with_documents", "every gold tool is exposed and, for each gold "
                 "pair's tool, at least one of its gold documents naming it is exposed (the "
                 "tool together with the document that makes it right)",
                 _E + "verify_tools_with_documents"),
):
    register_verifier(_info)
