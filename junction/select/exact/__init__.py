"""Exact joint selectors: every one returns the enumerator's selection, ties included.

- ``EnumerationJointSelector`` (enumerate.py): the oracle, every subset, up to ~20 candidates
- ``CombinatorialJointSelector`` (bnb.py): branch and bound without LP, small pools
- ``BranchAndCutJointSelector`` (bnc.py): branch and cut over HiGHS LPs, large pools
- ``AutoJointSelector`` (auto.py): the cheaper of the two for the pool's size

reduction.py (the reduced problem and its arrays), local_search.py (incumbents), model.py
(the MILP model, cycle cuts, product rows), limits.py (default limits) and highs.py (HiGHS
glue) are shared by bnb/bnc and by junction/select/exact/milp_reference.py. The branch and
cut's parts: nodelp.py (its LP), search.py (the state they share), root.py (root bounds
and incumbents), probing.py (fixing before the search), branching.py; bnc.py drives them.
The MILP reference (milp_reference.py, for tests and bench/ only): its passes in
milp_search.py, its LP relaxation in milp_lp.py.
"""

from junction.select.exact.auto import AUTO_COMBINATORIAL_MAX, AutoJointSelector
from junction.select.exact.bnb import COMBINATORIAL_MAX, CombinatorialJointSelector
from junction.select.exact.bnc import BranchAndCutJointSelector
from junction.select.exact.enumerate import EnumerationJointSelector
from junction.select.exact.limits import CLOCK_SLACK_S, DEFAULT_TIME_LIMIT_S, DEFAULT_WORK_LIMIT

__all__ = [
    "AUTO_COMBINATORIAL_MAX",
    "CLOCK_SLACK_S",
    "COMBINATORIAL_MAX",
    "DEFAULT_TIME_LIMIT_S",
    "DEFAULT_WORK_LIMIT",
    "AutoJointSelector",
    "BranchAndCutJointSelector",
    "CombinatorialJointSelector",
    "EnumerationJointSelector",
]
