"""Junction: joint selection of context documents and tools under one visible budget.

The names below are imported on first use (PEP 562 module ``__getattr__``), so a command
that needs one small part (``junction.errors``, ``junction.environment``: the command
line's start, the run-id lock) does not pay for the solvers' and BM25's imports.

- what a task is: ``tasks`` (tasks and the router view a strategy sees), ``resources``
  (contexts and tools), ``budget`` (the shared budget), ``tokens`` (token counting),
  ``text`` (words and lexical tokens in any script);
- the records looked up by name: ``registry`` (one catalog and loader for every kind),
  ``suites`` (the suite catalog), ``verifiers`` (the verifier kinds and their functions);
- choosing: ``candidates`` (BM25 lanes), ``dense`` (the dense first stage), ``select``
  (the joint problem and its solvers), ``strategies`` (router view to selection),
  ``learned`` (models fitted on training rows), ``judge`` and ``pages`` (the judge lane and
  chunked pages);
- running: ``units`` (one unit of work's record), ``evaluate`` (select, execute, verify,
  grade, record), ``agent`` (executors and graders), ``evidence`` (traces, store,
  reports);
- around them: ``environment`` (where files go), ``errors`` (typed errors), ``models``
  (the embedded GGUF models), ``sqlite_cache`` (the persistent caches' one opener).
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

_EXPORTS = {
    "Budget": "junction.budget",
    "BudgetCheck": "junction.budget",
    "BudgetUsage": "junction.budget",
    "Candidate": "junction.candidates",
    "LexicalContextCandidateGenerator": "junction.candidates",
    "LexicalToolCandidateGenerator": "junction.candidates",
    "JunctionError": "junction.errors",
    "ExecutionResult": "junction.agent.execution",
    "Outcome": "junction.verifiers",
    "ToolCall": "junction.agent.execution",
    "execute": "junction.agent.execution",
    "verify": "junction.verifiers",
    "verify_toy": "junction.verifiers",
    "ContextResource": "junction.resources",
    "SourceKind": "junction.resources",
    "ToolResource": "junction.resources",
    "AdaptiveSplitBaseline": "junction.select",
    "AutoJointSelector": "junction.select",
    "BranchAndCutJointSelector": "junction.select",
    "CombinatorialJointSelector": "junction.select",
    "EnumerationJointSelector": "junction.select",
    "FixedSplitBaseline": "junction.select",
    "JointProblem": "junction.select",
    "Selection": "junction.select",
    "BenchmarkTask": "junction.tasks",
    "Interaction": "junction.tasks",
    "RouterView": "junction.tasks",
    "VerifierSpec": "junction.tasks",
    "DEFAULT_TOKEN_COUNTER": "junction.tokens",
    "TokenCounter": "junction.tokens",
}
"""Each public name and the module that defines it."""


__all__ = [
    "DEFAULT_TOKEN_COUNTER",
    "AdaptiveSplitBaseline",
    "AutoJointSelector",
    "BenchmarkTask",
    "BranchAndCutJointSelector",
    "Budget",
    "BudgetCheck",
    "BudgetUsage",
    "Candidate",
    "CombinatorialJointSelector",
    "ContextResource",
    "EnumerationJointSelector",
    "ExecutionResult",
    "FixedSplitBaseline",
    "Interaction",
    "JointProblem",
    "JunctionError",
    "LexicalContextCandidateGenerator",
    "LexicalToolCandidateGenerator",
    "Outcome",
    "RouterView",
    "Selection",
    "SourceKind",
    "TokenCounter",
    "ToolCall",
    "ToolResource",
    "VerifierSpec",
    "execute",
    "verify",
    "verify_toy",
]


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'junction' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
