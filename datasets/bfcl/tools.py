"""BFCL tool suites: multiple, live_multiple, parallel_multiple and irrelevance.

See the package docstring (``junction_datasets.bfcl``) for the data format.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from junction_datasets.bfcl.build import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_POOL_SIZE,
    _build,
    _distractors,
)
from junction_datasets.bfcl.rows import BfclFunction, BfclRow, _Skip, load_category
from junction_datasets.registry import SuiteBuild
from pydantic import ValidationError

from junction.budget import Budget
from junction.resources import ToolResource
from junction.tasks import BenchmarkTask, VerifierSpec

# --------------------------------------------------------------------------- tool suites


class _ToolCache:
    """One ``ToolResource`` per ``BfclFunction`` object (pricing a schema once per build)."""

    def __init__(self) -> None:
        self._tools: dict[int, tuple[BfclFunction, ToolResource]] = {}

    def tools(self, functions: Iterable[BfclFunction]) -> tuple[ToolResource, ...]:
        """Tools for ``functions``, ordered by id; ``_Skip`` if a schema value is invalid."""
        out = []
        for fn in sorted(functions, key=lambda f: f.name):
            if id(fn) not in self._tools:
                try:
                    self._tools[id(fn)] = (fn, fn.to_tool({"source": "bfcl"}))
                except ValidationError:
                    raise _Skip("invalid_schema_value") from None
            out.append(self._tools[id(fn)][1])
        return tuple(out)


def _tool_pool(
    row: BfclRow, catalog: Mapping[str, BfclFunction], pool_size: int, suite: str, seed: int,
    cache: _ToolCache,
) -> tuple[ToolResource, ...]:
    own = [f.name for f in row.functions]
    extra = _distractors(catalog, own, pool_size - len(own), suite, seed, row.id)
    return cache.tools((*row.functions, *extra))


def tool_suite(
    category: str,
    suite: str,
    seed: int = 0,
    size: int | None = None,
    pool_size: int = DEFAULT_POOL_SIZE,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    split: str = "eval",
) -> SuiteBuild:
    """A tool-lane suite from any BFCL category with an answer file.

    Per row: tools = the row's functions + seeded distractors from the category's catalog
    (functions of every usable row, first occurrence by name), ``pool_size`` in all (the
    row's own functions are kept even past it), ordered by id; gold tools = the functions
    named in the gold calls; budget = ``max_tokens`` visible tokens; verifier
    ``tools_exposed``. Extra skip reason: ``gold_over_budget`` (the gold schemas alone
    exceed ``max_tokens``, so no exposed set could succeed). Gold calls stay in
    ``BenchmarkTask.metadata`` only.
    """
    loaded = load_category(category)
    catalog = loaded.catalog()
    cache = _ToolCache()

    def make_task(row: BfclRow) -> BenchmarkTask:
        if row.gold_names is None:
            raise _Skip("no_answer")
        tools = _tool_pool(row, catalog, pool_size, suite, seed, cache)
        gold_cost = sum(t.token_cost for t in tools if t.id in row.gold_names)
        if gold_cost > max_tokens:
            raise _Skip("gold_over_budget")
        return BenchmarkTask(
            task_id=f"{suite}-{row.id}",
            suite=suite,
            objective=row.objective,
            tools=tools,
            budget=Budget(max_tokens=max_tokens),
            gold_tool_ids=row.gold_names,
            verifier=VerifierSpec(kind="tools_exposed"),
            metadata={"bfcl_id": row.id, "bfcl_category": category,
                      "gold_calls": row.ground_truth, "gold_call_count": row.gold_call_count,
                      "listed_tool_ids": sorted(f.name for f in row.functions)},
        )

    return _build(loaded, suite, seed, size, make_task,
                  f"pool {pool_size} tools, budget {max_tokens} tokens", split)


def multiple_suite(seed: int = 0, size: int | None = None, **kwargs: Any) -> SuiteBuild:
    """``bfcl-multiple``: category ``multiple`` (one gold call among 2-4 functions)."""
    return tool_suite("multiple", "bfcl-multiple", seed, size, **kwargs)


def live_multiple_suite(seed: int = 0, size: int | None = None, **kwargs: Any) -> SuiteBuild:
    """``bfcl-live-multiple``: category ``live_multiple`` (user-contributed, 2-10 functions)."""
    return tool_suite("live_multiple", "bfcl-live-multiple", seed, size, **kwargs)


def parallel_multiple_suite(seed: int = 0, size: int | None = None, **kwargs: Any) -> SuiteBuild:
    """``bfcl-parallel-multiple``: category ``parallel_multiple`` (2-5 gold calls)."""
    return tool_suite("parallel_multiple", "bfcl-parallel-multiple", seed, size, **kwargs)


def irrelevance_suite(
    seed: int = 0,
    size: int | None = None,
    pool_size: int = DEFAULT_POOL_SIZE,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    category: str = "irrelevance",
    suite: str = "bfcl-irrelevance",
    split: str = "eval",
) -> SuiteBuild:
    """``bfcl-irrelevance``: no listed function fits; success means exposing no tool.

    Tools are built as in ``tool_suite``; no gold tool; verifier ``no_tools``.
    """
    loaded = load_category(category)
    catalog = loaded.catalog()
    cache = _ToolCache()

    def make_task(row: BfclRow) -> BenchmarkTask:
        return BenchmarkTask(
            task_id=f"{suite}-{row.id}",
            suite=suite,
            objective=row.objective,
            tools=_tool_pool(row, catalog, pool_size, suite, seed, cache),
            budget=Budget(max_tokens=max_tokens),
            verifier=VerifierSpec(kind="no_tools"),
            metadata={"bfcl_id": row.id, "bfcl_category": category,
                      "listed_tool_ids": sorted(f.name for f in row.functions)},
        )

    return _build(loaded, suite, seed, size, make_task,
                  f"pool {pool_size} tools, budget {max_tokens} tokens", split)
