"""Rerank instructions: the one line that states the judge's criterion, and its smoke fixture.

A score is logit("yes") - logit("no") for one (query, document) under one instruction;
changing the instruction changes the criterion, so scores are comparable only within one
query and one instruction.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = [
    "ECHO_INSTRUCTION",
    "FOLLOWS_INSTRUCTION",
    "RETRIEVAL_INSTRUCTION",
    "RerankInstruction",
    "SmokeFixture",
]


class SmokeFixture(BaseModel):
    """A query, a document that matches it, one that does not, and the minimum gap.

    The start-up gate requires score(matching) - score(non_matching) > ``min_gap`` (logits).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    query: str
    matching: str
    non_matching: str
    min_gap: float = Field(ge=0.0)


class RerankInstruction(BaseModel):
    """The instruction line plus its smoke fixture, or ``"none"`` (stated explicitly).

    ``text`` must be one non-empty line (it is inserted into the prompt's instruction slot).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    text: str
    fixture: SmokeFixture | Literal["none"]

    @field_validator("text")
    @classmethod
    def _one_line(cls, value: str) -> str:
        if not value.strip() or "\n" in value:
            raise ValueError(f"instruction text must be one non-empty line, got {value!r}")
        return value


# min_gap: the France fixture's measured gap (`junction judge smoke`; docs/measurement.md,
# "Judge quality"). 0.5 logit (odds ratio e^0.5 ≈ 1.6) is half the measured
# gap, above the batch-vs-naive noise floor (bench/perf/judge_throughput.py), while a swapped
# yes/no (gap ≈ -1.0) or a broken template still fails.
RETRIEVAL_INSTRUCTION = RerankInstruction(
    text="Given a request, decide whether the document is relevant and useful for carrying it out.",
    fixture=SmokeFixture(
        query="What is the capital of France?",
        matching="Paris is the capital and most populous city of France.",
        non_matching="Photosynthesis converts light energy into chemical energy in plants.",
        min_gap=0.5,
    ),
)
"""Default instruction (immutable): relevance of a document or tool to a request."""

# Sub-task admission (junction.pages.admission.admit_subtasks). Fixtures are "none": no gap was
# measured for them yet, so the start-up gate checks the answers and the tokenisation only.
FOLLOWS_INSTRUCTION = RerankInstruction(
    text="Given a task, decide whether the document is a step that helps carry out that task.",
    fixture="none",
)
"""Does a proposed sub-task (the document) follow from the task (the query)?"""

ECHO_INSTRUCTION = RerankInstruction(
    text="Given a task, decide whether the document asks for exactly the same thing as the task.",
    fixture="none",
)
"""Is an ancestor task (the document) the same task as the proposal (the query)?"""
