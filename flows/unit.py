"""The unit record the plan hands a worker, re-exported from ``junction.units`` (where
``junction.evaluate.evaluate_batch`` reads it)."""

from junction.units import AgentSpec, StrictInt, UnitSpec

__all__ = ["AgentSpec", "StrictInt", "UnitSpec"]
