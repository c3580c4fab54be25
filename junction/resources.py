"""Typed resources: passive contexts and executable tools.

Both are frozen pydantic v2 models validated at construction: ids are non-empty and not
whitespace, costs are >= 0 and finite. A bad value raises ``pydantic.ValidationError``
whose message names the field and the value.
"""

from __future__ import annotations

import math
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from junction.tokens import DEFAULT_TOKEN_COUNTER, TokenCounter, render_tool_schema

__all__ = [
    "MAX_ID_CHARS",
    "MAX_TEXT_CHARS",
    "ContextResource",
    "ResourceKind",
    "SourceKind",
    "ToolResource",
    "check_finite",
    "check_text",
    "schema_token_cost",
]

ResourceKind = Literal["context", "tool"]


class SourceKind(StrEnum):
    """Where a context came from."""

    POLICY = "policy"
    CODE = "code"
    MEMORY = "memory"
    OTHER = "other"


def check_finite(value: object, path: str) -> None:
    """Raise ``ValueError`` naming ``path`` if ``value`` holds a NaN or infinite float."""
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{path} must be finite, got {value!r}")
    elif isinstance(value, dict):
        for key, item in value.items():
            check_finite(item, f"{path}.{key}")
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            check_finite(item, f"{path}[{i}]")


MAX_ID_CHARS = 512
"""Longest resource id accepted (characters)."""
MAX_TEXT_CHARS = 1_000_000
"""Longest content/description accepted (characters): about 250k tokens, past any context."""


def check_text(value: str, field: str, limit: int = MAX_TEXT_CHARS) -> str:
    """Refuse text that is too long or not encodable as UTF-8 (lone surrogates)."""
    if len(value) > limit:
        raise ValueError(f"{field} is {len(value)} characters; the limit is {limit}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"{field} is not valid Unicode text ({exc.reason} at position {exc.start})"
        ) from None
    return value


def _check_id(value: str, field: str) -> str:
    if not value or not value.strip():
        raise ValueError(f"{field} must be a non-empty, non-whitespace string, got {value!r}")
    check_text(value, field, MAX_ID_CHARS)
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise ValueError(f"{field} must not contain control characters, got {value!r}")
    return value


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


def schema_token_cost(tool_id: str, description: str, json_schema: dict[str, Any],
                      counter: TokenCounter = DEFAULT_TOKEN_COUNTER) -> int:
    """What a tool's schema costs in context (tokens): ``counter`` on the schema text the
    agent sees (``junction.tokens.render_tool_schema``)."""
    return counter.count(render_tool_schema(tool_id, description, json_schema))


class ContextResource(_Frozen):
    """A passive document: read by the agent, never called.

    ``token_cost`` is the tokens (int >= 0) its content occupies in the visible context.
    """

    id: str
    content: str
    token_cost: int = Field(ge=0)
    source: SourceKind = SourceKind.OTHER
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        return _check_id(value, "id")

    @field_validator("content")
    @classmethod
    def _content(cls, value: str) -> str:
        return check_text(value, "content")

    @field_validator("metadata")
    @classmethod
    def _finite_metadata(cls, value: dict[str, Any]) -> dict[str, Any]:
        check_finite(value, "metadata")
        return value

    @property
    def kind(self) -> ResourceKind:
        return "context"

    @classmethod
    def from_text(
        cls,
        id: str,
        content: str,
        source: SourceKind | str = SourceKind.OTHER,
        metadata: dict[str, Any] | None = None,
        counter: TokenCounter = DEFAULT_TOKEN_COUNTER,
    ) -> ContextResource:
        """Build a context whose ``token_cost`` is ``counter.count(content)``."""
        return cls(
            id=id,
            content=content,
            token_cost=counter.count(content),
            source=SourceKind(source),
            metadata=metadata or {},
        )


class ToolResource(_Frozen):
    """An executable tool. Its JSON schema costs ``schema_token_cost`` tokens before any call.

    Units: ``estimated_latency_ms`` in milliseconds, ``estimated_cost_usd`` in US dollars,
    both >= 0 and finite.
    """

    id: str
    description: str
    json_schema: dict[str, Any] = Field(default_factory=dict)
    schema_token_cost: int = Field(ge=0)
    estimated_latency_ms: float = Field(default=0.0, ge=0.0)
    estimated_cost_usd: float = Field(default=0.0, ge=0.0)
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        return _check_id(value, "id")

    @field_validator("description")
    @classmethod
    def _description(cls, value: str) -> str:
        return check_text(value, "description")

    @model_validator(mode="after")
    def _finite(self) -> ToolResource:
        check_finite(self.json_schema, "json_schema")
        check_finite(self.metadata, "metadata")
        return self

    @property
    def kind(self) -> ResourceKind:
        return "tool"

    @property
    def token_cost(self) -> int:
        """Tokens the tool's schema occupies in the visible context."""
        return self.schema_token_cost

    def rendered_schema(self) -> str:
        """The schema text the agent sees (see ``junction.tokens.render_tool_schema``)."""
        return render_tool_schema(self.id, self.description, self.json_schema)

    @classmethod
    def from_schema(
        cls,
        id: str,
        description: str,
        json_schema: dict[str, Any],
        estimated_latency_ms: float = 0.0,
        estimated_cost_usd: float = 0.0,
        metadata: dict[str, Any] | None = None,
        counter: TokenCounter = DEFAULT_TOKEN_COUNTER,
    ) -> ToolResource:
        """Build a tool whose ``schema_token_cost`` is the count of its rendered schema."""
        return cls(
            id=id,
            description=description,
            json_schema=json_schema,
            schema_token_cost=schema_token_cost(id, description, json_schema, counter),
            estimated_latency_ms=estimated_latency_ms,
            estimated_cost_usd=estimated_cost_usd,
            metadata=metadata or {},
        )
