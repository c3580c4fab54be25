"""Building a BFCL suite from parsed rows: the suites' defaults (budget, pool sizes, size,
pool limit, memory backend), the train / evaluation split (``split_of``), seeded sampling
and distractors, and ``_build`` (rows to a ``SuiteBuild``), shared by the family modules.

See the package docstring (``junction_datasets.bfcl``) for the split and the sampling.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from junction_datasets.bfcl.rows import (
    BFCL_VERSION,
    _PREFIX,
    BfclCategory,
    BfclFunction,
    BfclRow,
    _Skip,
)
from junction_datasets.registry import SuiteBuild
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
"""Tasks per BFCL suite in the default benchmark (a seeded sample of the loaded rows): 40
tasks over the five suites, so the whole default benchmark, with the LLM-judge strategy
scoring every task uncached, stays within 10 minutes on 2 cores. ``size=None`` (the CLI's
``--full``) loads every row."""

TRAIN_FRACTION = 0.3
"""Share of each BFCL category's rows in the training part (``split_of``): enough gold
candidates for a per-family logistic model (about 60 rows of ``multiple``, 300 of
``live_multiple``, 40 of ``memory``) while most rows stay for evaluation."""

SPLITS = ("eval", "train", "all")
"""Valid ``split`` arguments of the suite builders."""


def split_of(row_id: str) -> str:
    """``"train"`` or ``"eval"``: the part a BFCL row belongs to, by a stable hash.

    The first 8 bytes of sha256(``"junction-split-v1:" + row_id``) as an integer, divided by
    2**64, below ``TRAIN_FRACTION`` is train. Depends on nothing but the id (no seed, no
    file order), so adding rows to a category never moves an existing row.
    """
    digest = hashlib.sha256(f"junction-split-v1:{row_id}".encode()).digest()
    return "train" if int.from_bytes(digest[:8], "big") / 2**64 < TRAIN_FRACTION else "eval"


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
