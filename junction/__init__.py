"""Junction: joint selection of context documents and tools under one visible budget."""

from junction.branch_and_cut import AutoJointSelector, BranchAndCutJointSelector
from junction.budget import Budget, BudgetCheck, BudgetUsage
from junction.combinatorial import CombinatorialJointSelector
from junction.candidates import (
    Candidate,
    LexicalContextCandidateGenerator,
    LexicalToolCandidateGenerator,
)
from junction.errors import JunctionError
from junction.execution import ExecutionResult, Outcome, ToolCall, execute, verify, verify_toy
from junction.milp import MilpJointSelector
from junction.resources import ContextResource, SourceKind, ToolResource
from junction.selection import JointProblem, Selection
from junction.selectors import AdaptiveSplitBaseline, ExactJointSelector, FixedSplitBaseline
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
    "ExactJointSelector",
    "ExecutionResult",
    "FixedSplitBaseline",
    "Interaction",
    "JointProblem",
    "JunctionError",
    "LexicalContextCandidateGenerator",
    "LexicalToolCandidateGenerator",
    "MilpJointSelector",
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
