"""Suites built from the Berkeley Function Calling Leaderboard (BFCL) data.

Source: the PyPI package ``bfcl-eval`` (pinned to ``BFCL_VERSION``, installed without its
dependencies), read through ``importlib.resources`` from ``bfcl_eval/data/``. Its question
files are JSON Lines despite the ``.json`` name; a row is ``{"id", "question": [[{"role",
"content"}, ...]], "function": [{"name", "description", "parameters"}]}``. Gold calls are in
``possible_answer/<same file name>`` as ``{"id", "ground_truth": [{name: {param:
[accepted values]}}, ...]}``; ``irrelevance`` files have no answer file.

Suites (all share ``DEFAULT_MAX_TOKENS`` visible tokens per task and no other limit, the
same budget for every strategy; they carry no unary priors and no interactions, so unary
utility is the lanes' max-normalised BM25 score, see ``junction.strategies``):

- ``bfcl-multiple``, ``bfcl-live-multiple``, ``bfcl-parallel-multiple``: tools are the row's
  functions plus seeded distractors from the whole category's catalog, up to ``pool_size``
  tools; gold tools are the functions named in the gold calls; verifier ``tools_exposed``.
- ``bfcl-irrelevance``: the same pool construction, no gold tool; verifier ``no_tools``.
- ``bfcl-memory``: contexts are the turns of the scenario's prior conversations (source
  ``memory``), tools are the memory API (``memory_kv`` by default) plus distractors from the
  other multi-turn APIs; gold contexts are the turns holding the answer's ``source``
  excerpt; verifier ``context_answer`` with the accepted answers.
- ``bfcl-memory-pages``: the same conversations as one HTML page per scenario (a heading
  per conversation, a paragraph per turn), chunked; contexts are the chunks, no tools;
  gold contexts are the chunks holding the source turns; verifier ``context_answer``.
- ``bfcl-subtasks``: three proposed sub-tasks per ``parallel_multiple`` request (its longest
  sentence, another request's longest sentence, the request itself); gold is the first;
  verifier ``contexts_exact``.

Memory data: ``BFCL_v4_memory.json`` rows are ``{"id", "question", "involved_classes":
["MemoryAPI"], "scenario"}`` (no ``function``); answers are ``{"id", "ground_truth":
[accepted strings], "source": excerpt}``, the excerpt often cut with "..." or lightly
paraphrased; ``memory_prereq_conversation/memory_<scenario>.json`` holds the scenario's
conversations ``{"id", "topic", "question": [[{"role": "user", "content"}], ...]}``, one
user message per turn; the memory API schemas are in ``multi_turn_func_doc/memory_*.json``.

Rows a builder cannot use are counted per reason in ``SuiteBuild.rows_skipped``; every row
of the file is either loaded or skipped (``rows_loaded + sum(rows_skipped) == rows``).
Train / evaluation split: every loaded row belongs to one part by a stable hash of its BFCL
row id (``split_of``: ``TRAIN_FRACTION`` of the rows train, the rest evaluation; the same for
every seed, strategy and run). Builders take ``split`` = ``"eval"`` (the default: what the
benchmark evaluates), ``"train"`` (what learned strategies fit on, never evaluated) or
``"all"``; ``SuiteBuild.rows_held_out`` counts the loaded rows of the other part.
``size`` takes a seeded sample of the split's rows (kept in file order, prefix-stable for a
seed); ``size=None`` takes every row of the split. The same seed gives byte-identical tasks.
The row's own listed functions are ``metadata["listed_tool_ids"]`` (the memory API's
functions on memory; the ``bfcl_listed`` reference exposes them). Gold calls and answers
live only in ``BenchmarkTask.metadata``, the verifier and the gold
ids, never in a context, a tool or their metadata; tools are ordered by id, so a tool's
position does not tell a row's own function from a distractor.

Modules: ``rows`` (the data package and a category file parsed into rows or skip
reasons), ``schemas`` (BFCL parameter schemas as JSON Schema), ``build`` (rows to a
``SuiteBuild``: defaults, split, sampling, distractors), and one per family: ``tools``,
``memory``, ``pages`` (memory as chunked pages) and ``subtasks``.
"""

from __future__ import annotations

from junction_datasets.bfcl.build import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_MEMORY_POOL_SIZE,
    DEFAULT_POOL_SIZE,
    DEFAULT_SIZE,
    POOL_LIMIT,
)
from junction_datasets.bfcl.memory import (
    MEMORY_REFERENCE_NOTE,
    match_source_turns,
    memory_suite,
)
from junction_datasets.bfcl.pages import (
    PAGE_CHUNK_TOKENS,
    PAGE_POOL_LIMIT,
    PAGE_TOP_K,
    memory_pages_suite,
    scenario_page_html,
)
from junction_datasets.bfcl.rows import (
    BFCL_VERSION,
    BfclCategory,
    BfclFunction,
    BfclRow,
    gold_function_names,
    load_category,
)
from junction_datasets.bfcl.schemas import bfcl_to_json_schema
from junction_datasets.bfcl.subtasks import (
    SUBTASK_KINDS,
    subtask_suite,
)
from junction_datasets.bfcl.tools import (
    irrelevance_suite,
    live_multiple_suite,
    multiple_suite,
    parallel_multiple_suite,
    tool_suite,
)
from junction_datasets.split import SPLITS, TRAIN_FRACTION, split_of

REFERENCE_SET = "bfcl"
"""The BFCL suites' reference set: ``bfcl_listed`` and ``all_tools`` run on them."""

__all__ = [
    "BFCL_VERSION",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_MEMORY_POOL_SIZE",
    "DEFAULT_POOL_SIZE",
    "DEFAULT_SIZE",
    "MEMORY_REFERENCE_NOTE",
    "PAGE_CHUNK_TOKENS",
    "PAGE_POOL_LIMIT",
    "PAGE_TOP_K",
    "POOL_LIMIT",
    "REFERENCE_SET",
    "SPLITS",
    "SUBTASK_KINDS",
    "TRAIN_FRACTION",
    "BfclCategory",
    "BfclFunction",
    "BfclRow",
    "bfcl_to_json_schema",
    "gold_function_names",
    "irrelevance_suite",
    "live_multiple_suite",
    "load_category",
    "match_source_turns",
    "memory_pages_suite",
    "memory_suite",
    "multiple_suite",
    "parallel_multiple_suite",
    "scenario_page_html",
    "split_of",
    "subtask_suite",
    "tool_suite",
]
