"""What an agent grader gives: one ``AgentGrade`` per graded task, and the ``Measure``
records a grader declares for the numbers it adds beside success and outcome.

A grader (``junction.agent.graders.GraderInfo``) declares its measures once (name,
meaning, unit, direction); every grade it gives carries a value for each of them in
``AgentGrade.measures``, and ``junction.agent.graders.grade_agent`` refuses a grade whose
measures differ from the declared ones. The trace holds them in long format
(``agent_measures``: one ``{name, value}`` per measure, ``junction.evidence.traces``), the
warehouse's ``agent_measures`` view has one row per (trace, measure), and the report's
agent-measure table shows every measure of every grader that graded a run's tasks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, field_validator

__all__ = ["AgentGrade", "Measure"]

Direction = Literal["higher", "lower", "neither"]


@dataclass(frozen=True)
class Measure:
    """One number an agent grader gives per graded task.

    ``name``: a lower-case identifier (``[a-z][a-z0-9_]*``), the key in
    ``AgentGrade.measures`` and the ``name`` in the trace's ``agent_measures``;
    ``meaning``: one line for the report's definitions; ``unit``: what the value counts
    ("fraction in [0, 1]", "calls, >= 0"); ``direction``: which way is better (``higher``,
    ``lower``, ``neither``). The report averages it over the graded tasks of a cell.

    Raises ``ValueError`` naming the field for a bad name or direction.
    """

    name: str
    meaning: str
    unit: str
    direction: Direction = "higher"

    def __post_init__(self) -> None:
        if not self.name or not self.name[0].isalpha() or not self.name.islower() or not all(
                ch.isalnum() or ch == "_" for ch in self.name):
            raise ValueError(f"Measure name {self.name!r}: a lower-case identifier "
                             "([a-z][a-z0-9_]*)")
        if self.direction not in ("higher", "lower", "neither"):
            raise ValueError(f"Measure {self.name!r}: direction {self.direction!r} is not "
                             "one of higher, lower, neither")


class AgentGrade(BaseModel):
    """One graded task: ``success``, ``outcome`` (a key of the grader's ``outcomes``), the
    checker's ``error_type`` (empty on success), its first error message (``detail``) and
    ``measures``: a finite value for each ``Measure`` the grader declares (name -> value;
    empty for a grader that declares none, as BFCL's)."""

    model_config = ConfigDict(frozen=True, allow_inf_nan=False)

    success: bool
    outcome: str
    error_type: str = ""
    detail: str = ""
    measures: dict[str, float] = {}

    @field_validator("measures")
    @classmethod
    def _finite(cls, value: dict[str, float]) -> dict[str, float]:
        for name, number in value.items():
            if not math.isfinite(number):
                raise ValueError(f"measure {name!r} is {number!r}, not a finite number")
        return dict(sorted(value.items()))
