"""Benchmark tasks and the router view a strategy is allowed to see.

A ``BenchmarkTask`` keeps its gold annotations and verifier spec apart from what a strategy
sees: ``router_view()`` returns a ``RouterView`` that has neither.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from junction.budget import Budget
from junction.resources import ContextResource, ToolResource, check_finite, check_text
from junction.verifiers import VERIFIERS, verifier_names

__all__ = ["BenchmarkTask", "GoldPair", "Interaction", "RouterView", "VerifierSpec"]


class Interaction(BaseModel):
    """Interaction score ``w(source, target)`` for an ordered pair of resource ids (unitless)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    source: str
    target: str
    weight: float


class GoldPair(BaseModel):
    """A gold (context, tool) pair: the document that makes the tool right (gold; never in
    a ``RouterView``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    context_id: str
    tool_id: str


class VerifierSpec(BaseModel):
    """How a task's outcome is verified; hidden from strategies.

    ``kind``: a kind of the verifier catalog (``junction.verifiers``: what success means
    under it and the function that grades it, which says which ``params`` it reads); an
    unknown kind is a ``ValidationError`` listing the valid ones.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    kind: str
    params: dict[str, Any] = Field(default_factory=dict)

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, value: str) -> str:
        if value not in VERIFIERS:
            raise ValueError(f"unknown verifier kind {value!r}; valid kinds: "
                             f"{', '.join(verifier_names())}")
        return value


class _TaskBase(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    task_id: str
    suite: str
    objective: str
    contexts: tuple[ContextResource, ...] = ()
    tools: tuple[ToolResource, ...] = ()
    budget: Budget = Field(default_factory=Budget)
    initial_state: dict[str, Any] = Field(default_factory=dict)
    unary: dict[str, float] = Field(default_factory=dict)
    interactions: tuple[Interaction, ...] = ()

    @field_validator("task_id", "suite")
    @classmethod
    def _non_empty(cls, value: str, info: Any) -> str:
        if not value or not value.strip():
            raise ValueError(f"{info.field_name} must be non-empty, got {value!r}")
        return check_text(value, info.field_name, 512)

    @field_validator("objective")
    @classmethod
    def _objective(cls, value: str) -> str:
        return check_text(value, "objective")

    @model_validator(mode="after")
    def _consistent(self) -> _TaskBase:
        check_finite(self.initial_state, "initial_state")
        ids: set[str] = set()
        resources: tuple[ContextResource | ToolResource, ...] = (*self.contexts, *self.tools)
        for resource in resources:
            if resource.id in ids:
                raise ValueError(f"task {self.task_id!r}: duplicate resource id {resource.id!r}")
            ids.add(resource.id)
        for rid in self.unary:
            if rid not in ids:
                raise ValueError(f"task {self.task_id!r}: unary names unknown resource {rid!r}")
        for pair in self.interactions:
            for rid in (pair.source, pair.target):
                if rid not in ids:
                    raise ValueError(
                        f"task {self.task_id!r}: interaction names unknown resource {rid!r}"
                    )
        return self

    def context(self, resource_id: str) -> ContextResource:
        """The context with this id; ``KeyError`` naming the id otherwise."""
        for c in self.contexts:
            if c.id == resource_id:
                return c
        raise KeyError(f"task {self.task_id!r} has no context {resource_id!r}")

    def tool(self, resource_id: str) -> ToolResource:
        """The tool with this id; ``KeyError`` naming the id otherwise."""
        for t in self.tools:
            if t.id == resource_id:
                return t
        raise KeyError(f"task {self.task_id!r} has no tool {resource_id!r}")

    def interaction_map(self) -> dict[tuple[str, str], float]:
        """Interactions keyed by ordered pair; repeated pairs are summed."""
        out: dict[tuple[str, str], float] = {}
        for pair in self.interactions:
            key = (pair.source, pair.target)
            out[key] = out.get(key, 0.0) + pair.weight
        return out


class RouterView(_TaskBase):
    """What a strategy may see: the objective, resources, budget, state, priors. No gold."""


class BenchmarkTask(_TaskBase):
    """One benchmark task: a ``RouterView`` plus gold sets and the verifier spec.

    Gold ids must name resources of the task; ``ValidationError`` otherwise.
    """

    gold_context_ids: tuple[str, ...] = ()
    gold_tool_ids: tuple[str, ...] = ()
    gold_pairs: tuple[GoldPair, ...] = ()
    """(gold context, gold tool) pairs where the context is what makes the tool right."""
    verifier: VerifierSpec
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _gold_known(self) -> BenchmarkTask:
        context_ids = {c.id for c in self.contexts}
        tool_ids = {t.id for t in self.tools}
        for rid in self.gold_context_ids:
            if rid not in context_ids:
                raise ValueError(f"task {self.task_id!r}: gold context {rid!r} is not a context")
        for rid in self.gold_tool_ids:
            if rid not in tool_ids:
                raise ValueError(f"task {self.task_id!r}: gold tool {rid!r} is not a tool")
        for pair in self.gold_pairs:
            if (pair.context_id not in self.gold_context_ids
                    or pair.tool_id not in self.gold_tool_ids):
                raise ValueError(f"task {self.task_id!r}: gold pair ({pair.context_id!r}, "
                                 f"{pair.tool_id!r}) is not a gold context and a gold tool")
        check_finite(self.metadata, "metadata")
        return self

    def router_view(self) -> RouterView:
        """The task as a strategy sees it: no gold ids, no verifier, no metadata."""
        fields = {name: getattr(self, name) for name in RouterView.model_fields}
        return RouterView(**fields)
