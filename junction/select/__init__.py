"""Selection: everything that turns a ``JointProblem`` into a ``Selection``.

problem.py (the problem, the record, the tie rule, feasibility), baselines.py (fixed and
adaptive split), exact/ (the enumeration oracle and the exact searches), coverage.py (the
coverage problem: a tool is worth something only when a document explains it) and
instances.py (seeded instances of the joint problem, for tests and benchmarks).
"""

from junction.select.baselines import AdaptiveSplitBaseline, FixedSplitBaseline
from junction.select.exact import (
    AutoJointSelector,
    BranchAndCutJointSelector,
    CombinatorialJointSelector,
    EnumerationJointSelector,
)
from junction.select.problem import (
    JointProblem,
    Selection,
    Selector,
    exceeded_limit,
    make_selection,
    objective_terms,
)

__all__ = [
    "AdaptiveSplitBaseline",
    "AutoJointSelector",
    "BranchAndCutJointSelector",
    "CombinatorialJointSelector",
    "EnumerationJointSelector",
    "FixedSplitBaseline",
    "JointProblem",
    "Selection",
    "Selector",
    "exceeded_limit",
    "make_selection",
    "objective_terms",
]
