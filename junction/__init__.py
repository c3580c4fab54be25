"""Junction: joint selection of context documents and tools under one visible budget."""

from junction.budget import Budget, BudgetCheck, BudgetUsage
from junction.candidates import (
    Candidate,
    LexicalContextCandidateGenerator,
    LexicalToolCandidateGenerator,
)
from junction.errors import JunctionError
from junction.agent.execution import ExecutionResult, Outcome, ToolCall, execute, verify, verify_toy
from junction.resources import ContextResource, SourceKind, ToolResource
from junction.select import (
    AdaptiveSplitBaseline,
    AutoJointSelector,
    BranchAndCutJointSelector,
    CombinatorialJointSelector,
    EnumerationJointSelector,
    FixedSplitBaseline,
    JointProblem,
    Selection,
)
from junction.tasks import BenchmarkTask, Interaction, RouterView, VerifierSpec
from junction.tokens import DEFAULT_TOKEN_COUNTER, TokenCounter

__version__ = "0.1.0"

__all__ = [
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
    "DEFAULT_TOKEN_COUNTER",
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
