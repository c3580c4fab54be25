"""Building a BFCL suite from parsed rows: the suites' defaults (budget, pool sizes, size,
pool limit, memory backend), the train / evaluation split (``split_of``), seeded sampling
and distractors, and ``_build`` (rows to a ``SuiteBuild``), shared by the family modules.

See the package docstring (``junction_datasets.bfcl``) for the split and the sampling.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from junction_datasets.bfcl.rows import (
    _PREFIX,
    BFCL_VERSION,
    BfclCategory,
    BfclFunction,
    BfclRow,
    _Skip,
)
from junction_datasets.registry import SuiteBuild
from junction_datasets.split import SPLITS, split_of

from junction.tasks import BenchmarkTask

DEFAULT_MAX_TOKENS = 1024
"""Visible-token budget of every BFCL task (contexts + tool schemas). A BFCL schema costs
about 200 tokens (median, approximate counter), so about four or five schemas fit."""

DEFAULT_POOL_SIZE = 16
"""Tools per tool-lane task: the row's functions plus distractors (about 3,400 tokens of
schemas, more than three times ``DEFAULT_MAX_TOKENS``)."""

DEFAULT_MEMORY_POOL_SIZE = 20
"""Tools per memory task: the 15 ``memory_kv`` functions plus 5 distractors."""

DEFAULT_SIZE = 8
"""Tasks of the BFCL page and sub-task suites in a run without ``size`` (their
``SuiteInfo.default_size``; the five BFCL suites of the default benchmark register 40,
``junction_datasets``); ``size=None`` (the CLI's ``--full``) loads every row."""

POOL_LIMIT = 8
"""Candidates per lane handed to a strategy: the BM25 top 8 contexts and top 8 tools. Every
strategy gets the same pool (``judge_admission`` judges the top 4 of it,
``DEFAULT_POOL_PER_LANE``)."""

DEFAULT_MEMORY_BACKEND = "memory_kv"
_MEMORY_APIS = ("memory_kv", "memory_rec_sum", "memory_vector")


def _rng(*parts: object) -> random.Random:
    # Seeding with a str is stable across platforms and Python 3.2+ (random.seed docs).
    return random.Random("junction-bfcl:" + ":".join(str(p) for p in parts))


def _sample(items: Sequence[Any], size: int | None, *parts: object) -> list[Any]:
    """A seeded sample of ``size`` items kept in their original order (all when None).

    Prefix-stable: for one seed, the sample of size n is inside the sample of size n + 1.
    """
    if size is None or size >= len(items):
        return list(items)
    if size < 0:
        raise ValueError(f"size must be >= 0 or None, got {size!r}")
    order = list(range(len(items)))
    _rng("sample", *parts).shuffle(order)
    return [items[i] for i in sorted(order[:size])]


def _distractors(
    catalog: Mapping[str, BfclFunction], exclude: Iterable[str], k: int, *parts: object
) -> list[BfclFunction]:
    """``k`` catalog functions not named in ``exclude``, drawn with a seed (name order)."""
    excluded = set(exclude)
    names = sorted(n for n in catalog if n not in excluded)
    k = max(0, min(k, len(names)))
    return [catalog[n] for n in sorted(_rng("distractors", *parts).sample(names, k))]


def _build(
    category: BfclCategory,
    suite: str,
    seed: int,
    size: int | None,
    make_task: Callable[[BfclRow], BenchmarkTask],
    note: str,
    split: str = "eval",
) -> SuiteBuild:
    """Turn every usable row into a task (or a skip reason), keep the rows of ``split``
    (``split_of``), then sample ``size`` of them. ``ValueError`` on an unknown split."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    skipped = Counter(e for e in category.entries if isinstance(e, str))
    tasks: list[BenchmarkTask] = []
    for row in category.rows:
        try:
            tasks.append(make_task(row))
        except _Skip as skip:
            skipped[str(skip.args[0])] += 1
    part = [t for t in tasks if split == "all" or split_of(t.metadata["bfcl_id"]) == split]
    chosen = _sample(part, size, suite, seed)
    rows = len(category.entries)
    return SuiteBuild(
        tasks=chosen,
        rows_loaded=len(tasks),
        rows_skipped=dict(sorted(skipped.items())),
        rows_held_out=len(tasks) - len(part),
        note=(f"BFCL {BFCL_VERSION} {_PREFIX}{category.name}.json: {rows} rows, "
              f"{len(tasks)} loaded, {len(part)} in the {split} split, {len(chosen)} sampled "
              f"(seed {seed}); {note}"),
    )
