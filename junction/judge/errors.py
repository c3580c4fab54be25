"""Typed errors of the judge lane; each message names the gate, file or value involved."""

from __future__ import annotations

from junction.errors import JunctionError

__all__ = ["JudgeError", "SmokeTestError"]


class JudgeError(JunctionError):
    """The judge cannot load, tokenise or score (model file, llama.cpp call, configuration)."""


class SmokeTestError(JudgeError):
    """A start-up smoke gate failed; ``gate`` names it and ``measured`` holds its values."""

    def __init__(self, gate: str, message: str, measured: dict | None = None) -> None:
        super().__init__(f"smoke gate {gate!r} failed: {message}")
        self.gate = gate
        self.measured = dict(measured or {})
