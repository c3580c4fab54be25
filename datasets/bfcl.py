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
"""

from __future__ import annotations

import hashlib
import html
import importlib.metadata
import importlib.resources
import json
import random
import re
import unicodedata
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from pydantic import ValidationError

from junction_datasets.registry import SuiteBuild
from junction.budget import Budget
from junction.pages.chunking import Chunk, chunk_page
from junction.errors import DatasetError
from junction.agent.execution import normalise_answer
from junction.resources import ContextResource, SourceKind, ToolResource
from junction.tasks import BenchmarkTask, VerifierSpec

__all__ = [
    "BFCL_VERSION",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_POOL_SIZE",
    "DEFAULT_MEMORY_POOL_SIZE",
    "DEFAULT_SIZE",
    "POOL_LIMIT",
    "SPLITS",
    "TRAIN_FRACTION",
    "split_of",
    "BfclFunction",
    "BfclRow",
    "BfclCategory",
    "bfcl_to_json_schema",
    "gold_function_names",
    "load_category",
    "match_source_turns",
    "tool_suite",
    "multiple_suite",
    "live_multiple_suite",
    "parallel_multiple_suite",
    "irrelevance_suite",
    "memory_suite",
    "memory_pages_suite",
    "scenario_page_html",
    "PAGE_CHUNK_TOKENS",
    "PAGE_POOL_LIMIT",
    "PAGE_TOP_K",
    "SUBTASK_KINDS",
    "subtask_suite",
]

BFCL_VERSION = "2026.3.23"
"""The ``bfcl-eval`` version whose data shapes this module was written against."""

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
_DATA_PACKAGE = "bfcl_eval"
_PREFIX = "BFCL_v4_"

# BFCL's parameter type names (Python, Java and JavaScript flavoured) -> JSON Schema type.
# ``None`` means "any value": the ``type`` key is dropped.
_TYPE_MAP: dict[str, str | None] = {
    "string": "string", "String": "string", "char": "string",
    "integer": "integer", "long": "integer",
    "float": "number", "double": "number", "number": "number",
    "boolean": "boolean", "Boolean": "boolean",
    "array": "array", "Array": "array", "ArrayList": "array", "tuple": "array",
    "dict": "object", "HashMap": "object", "object": "object",
    "null": "null",
    "any": None, "": None,
}
_SUBSCHEMA_KEYS = ("items", "additionalProperties")
_DROPPED_KEYS = ("optional",)  # BFCL-only flag; absence from ``required`` says the same


# --------------------------------------------------------------------------- schemas


def bfcl_to_json_schema(schema: Mapping[str, Any], path: str = "parameters") -> dict[str, Any]:
    """Convert one BFCL parameter schema to standard JSON Schema (draft 2020-12 keywords).

    Types map through ``_TYPE_MAP`` (``dict`` -> ``object``, ``float`` -> ``number``,
    ``tuple`` -> ``array``, ``any`` -> no ``type``, Java names such as ``String`` or
    ``HashMap`` likewise); ``properties``, ``items`` and ``additionalProperties`` are
    converted recursively; BFCL's ``optional`` flag is dropped; other keys (description,
    default, enum, required, bounds) are kept. Raises ``DatasetError`` naming ``path`` for
    an unknown type name or a schema that is not an object.
    """
    if not isinstance(schema, Mapping):
        raise DatasetError(f"{path}: schema must be an object, got {type(schema).__name__}")
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _DROPPED_KEYS:
            continue
        if key == "type":
            if not isinstance(value, str) or value not in _TYPE_MAP:
                raise DatasetError(f"{path}.type: unsupported BFCL type {value!r}")
            if _TYPE_MAP[value] is not None:
                out["type"] = _TYPE_MAP[value]
        elif key == "properties":
            if not isinstance(value, Mapping):
                raise DatasetError(f"{path}.properties: must be an object")
            out["properties"] = {
                name: bfcl_to_json_schema(sub, f"{path}.properties.{name}")
                for name, sub in value.items()
            }
        elif key in _SUBSCHEMA_KEYS and isinstance(value, Mapping):
            out[key] = bfcl_to_json_schema(value, f"{path}.{key}")
        else:
            out[key] = value
    return out


# --------------------------------------------------------------------------- rows


@dataclass(frozen=True)
class BfclFunction:
    """One BFCL function with its parameters already converted to JSON Schema."""

    name: str
    description: str
    parameters: dict[str, Any]

    def to_tool(self, metadata: dict[str, Any] | None = None) -> ToolResource:
        """The ``ToolResource`` (id = function name; token cost of the rendered schema)."""
        return ToolResource.from_schema(self.name, self.description, self.parameters,
                                        metadata=metadata)


@dataclass(frozen=True)
class BfclRow:
    """One usable question row: its messages, functions and (if any) gold function names."""

    id: str
    messages: tuple[tuple[str, str], ...]
    functions: tuple[BfclFunction, ...]
    gold_names: tuple[str, ...] | None
    gold_call_count: int
    ground_truth: Any
    extra: dict[str, Any]

    @property
    def objective(self) -> str:
        """Every message's content in order, one per line (system prompt included)."""
        return "\n".join(content for _, content in self.messages)


@dataclass(frozen=True)
class BfclCategory:
    """A category file read: rows in file order (``BfclRow`` or a skip reason string)."""

    name: str
    entries: tuple[BfclRow | str, ...]

    @property
    def rows(self) -> list[BfclRow]:
        """The usable rows, in file order."""
        return [e for e in self.entries if isinstance(e, BfclRow)]

    @property
    def skipped(self) -> dict[str, int]:
        """Rows skipped, per reason (sorted by reason)."""
        return dict(sorted(Counter(e for e in self.entries if isinstance(e, str)).items()))

    def catalog(self) -> dict[str, BfclFunction]:
        """Every function of the usable rows by name, first occurrence in file order."""
        out: dict[str, BfclFunction] = {}
        for row in self.rows:
            for fn in row.functions:
                out.setdefault(fn.name, fn)
        return out


class _Skip(Exception):
    """A row cannot be used; ``args[0]`` is the reason (a short snake_case key)."""


def gold_function_names(ground_truth: Any) -> tuple[str, ...]:
    """Function names of BFCL gold calls, first occurrence order, repeats removed.

    ``ground_truth`` is a list of one-key objects ``{name: {param: [accepted values]}}``;
    parallel calls of one function name it once. Raises ``DatasetError`` on another shape.
    """
    if not isinstance(ground_truth, list) or not ground_truth:
        raise DatasetError(f"ground_truth must be a non-empty list, got {ground_truth!r:.80}")
    names: list[str] = []
    for i, call in enumerate(ground_truth):
        if not isinstance(call, dict) or len(call) != 1:
            raise DatasetError(f"ground_truth[{i}] must be a one-key object, got {call!r:.80}")
        name = next(iter(call))
        if not isinstance(name, str) or not name:
            raise DatasetError(f"ground_truth[{i}]: function name must be a non-empty string")
        if name not in names:
            names.append(name)
    return tuple(names)


@lru_cache(maxsize=1)
def _data_root():
    try:
        root = importlib.resources.files(_DATA_PACKAGE) / "data"
    except ModuleNotFoundError:
        raise DatasetError(
            f"package {_DATA_PACKAGE!r} is not installed; run "
            f"`pip install --no-deps bfcl-eval=={BFCL_VERSION}` (or `make setup`)"
        ) from None
    try:
        installed = importlib.metadata.version("bfcl-eval")
    except importlib.metadata.PackageNotFoundError:
        installed = None
    if installed is not None and installed != BFCL_VERSION:
        warnings.warn(
            f"bfcl-eval {installed} is installed; BFCL suites were checked against "
            f"{BFCL_VERSION}", stacklevel=3,
        )
    return root


def _read_jsonl(relative: str) -> list[Any]:
    """Lines of a data file parsed as JSON; a line that fails parses to ``_Skip``."""
    path = _data_root().joinpath(*relative.split("/"))
    if not path.is_file():
        raise DatasetError(f"BFCL data file {relative!r} not found in {_DATA_PACKAGE}")
    out: list[Any] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            out.append(_Skip("malformed_json"))
    return out


def _messages(raw: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(raw, list) or not raw:
        raise _Skip("malformed_question")
    if len(raw) != 1:
        raise _Skip("multi_turn")
    turn = raw[0]
    if not isinstance(turn, list):
        raise _Skip("malformed_question")
    messages = []
    for message in turn:
        if not isinstance(message, dict) or not isinstance(message.get("content"), str):
            raise _Skip("malformed_question")
        messages.append((str(message.get("role", "")), message["content"]))
    if not any(role == "user" and content.strip() for role, content in messages):
        raise _Skip("no_user_message")
    return tuple(messages)


def _functions(raw: Any) -> tuple[BfclFunction, ...]:
    if not isinstance(raw, list):
        raise _Skip("no_function_field")
    out = []
    for i, fn in enumerate(raw):
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not fn["name"]:
            raise _Skip("malformed_function")
        try:
            params = bfcl_to_json_schema(fn.get("parameters", {}), f"function[{i}].parameters")
        except DatasetError:
            raise _Skip("unsupported_param_type") from None
        out.append(BfclFunction(fn["name"], str(fn.get("description", "")), params))
    if len({f.name for f in out}) != len(out):
        raise _Skip("duplicate_function_name")
    return tuple(out)


def _parse_row(raw: Any, answers: dict[str, Any] | None, require_functions: bool) -> BfclRow:
    if isinstance(raw, _Skip):
        raise raw
    if not isinstance(raw, dict) or not isinstance(raw.get("id"), str) or not raw["id"]:
        raise _Skip("missing_id")
    messages = _messages(raw.get("question"))
    functions = _functions(raw.get("function")) if require_functions else ()
    gold_names: tuple[str, ...] | None = None
    ground_truth: Any = None
    calls = 0
    if answers is not None:
        answer = answers.get(raw["id"])
        if answer is None:
            raise _Skip("no_answer")
        ground_truth = answer.get("ground_truth")
        if require_functions:
            try:
                gold_names = gold_function_names(ground_truth)
            except DatasetError:
                raise _Skip("malformed_answer") from None
            calls = len(ground_truth)
            listed = {f.name for f in functions}
            if any(name not in listed for name in gold_names):
                raise _Skip("gold_function_not_listed")
    extra = {k: v for k, v in raw.items() if k not in ("id", "question", "function")}
    if answers is not None:
        extra["answer"] = answers[raw["id"]]
    return BfclRow(raw["id"], messages, functions, gold_names, calls, ground_truth, extra)


def load_category(category: str, require_functions: bool = True) -> BfclCategory:
    """Read ``BFCL_v4_<category>.json`` and its answer file (when one exists).

    Works for any BFCL category whose rows have one turn of messages (and a ``function``
    list, unless ``require_functions`` is false). Each row becomes a ``BfclRow`` or a skip
    reason: ``malformed_json``, ``missing_id``, ``duplicate_id``, ``malformed_question``,
    ``multi_turn``, ``no_user_message``, ``no_function_field``, ``malformed_function``,
    ``unsupported_param_type``, ``duplicate_function_name``, ``no_answer``,
    ``malformed_answer``, ``gold_function_not_listed``. Raises ``DatasetError`` when the
    package or the question file is missing.
    """
    name = f"{_PREFIX}{category}.json"
    raw_rows = _read_jsonl(name)
    answers: dict[str, Any] | None = None
    if _data_root().joinpath("possible_answer", name).is_file():
        answers = {}
        for answer in _read_jsonl(f"possible_answer/{name}"):
            if isinstance(answer, dict) and isinstance(answer.get("id"), str):
                answers.setdefault(answer["id"], answer)
    entries: list[BfclRow | str] = []
    seen: set[str] = set()
    for raw in raw_rows:
        try:
            if isinstance(raw, dict) and raw.get("id") in seen:
                raise _Skip("duplicate_id")
            row = _parse_row(raw, answers, require_functions)
        except _Skip as skip:
            entries.append(str(skip.args[0]))
            continue
        seen.add(row.id)
        entries.append(row)
    return BfclCategory(category, tuple(entries))


# --------------------------------------------------------------------------- sampling


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


# --------------------------------------------------------------------------- memory

_ELLIPSIS = re.compile(r"\.\.\.|…")
_CLAUSE = re.compile(r"\.\.\.|…|[.:;!?](?:\s|$)|[—–]|\s-\s")
_QUOTES = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"'})
_FUZZY_MIN_COVERAGE = 0.75


@lru_cache(maxsize=4096)
def _words(text: str) -> tuple[str, ...]:
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES).lower()
    return tuple(re.findall(r"\w+", text))


def _has_run(haystack: Sequence[str], needle: Sequence[str]) -> bool:
    k = len(needle)
    first = needle[0]
    return any(haystack[i] == first and tuple(haystack[i:i + k]) == tuple(needle)
               for i in range(len(haystack) - k + 1))


def _pieces(source: str, pattern: re.Pattern[str]) -> list[tuple[str, ...]]:
    return [w for w in (_words(p) for p in pattern.split(source)) if w]


def match_source_turns(source: str, turns: Sequence[str]) -> tuple[list[int], str]:
    """Indexes of the turns that hold a BFCL memory ``source`` excerpt, and the rule used.

    Text is compared as word sequences (NFKC, curly quotes straightened, lower case,
    punctuation ignored). Rules, first that matches any turn wins:
    ``exact``: every ellipsis-separated fragment of the excerpt occurs in the turn;
    ``clauses``: every clause (split also at sentence punctuation and dashes) occurs in it
    (excerpts that join a label to a later sentence: "Monday: Need to ...");
    ``fuzzy``: the single turn holding the most of the excerpt's word bigrams, if it holds
    at least 75% of them (lightly paraphrased excerpts). No match gives ``([], "none")``.
    """
    words = [_words(t) for t in turns]
    for rule, pattern in (("exact", _ELLIPSIS), ("clauses", _CLAUSE)):
        pieces = _pieces(source, pattern)
        if not pieces:
            return [], "none"
        hits = [i for i, w in enumerate(words) if all(_has_run(w, p) for p in pieces)]
        if hits:
            return hits, rule
    source_words = _words(source)
    bigrams = set(zip(source_words, source_words[1:]))
    if not bigrams:
        return [], "none"
    coverage = [len(bigrams & set(zip(w, w[1:]))) / len(bigrams) for w in words]
    best = max(coverage, default=0.0)
    if best >= _FUZZY_MIN_COVERAGE and coverage.count(best) == 1:
        return [coverage.index(best)], "fuzzy"
    return [], "none"


def _scenario_conversations(scenario: str) -> list[tuple[str, str, list[str]]]:
    """The scenario's prior conversations, file order: (id, topic, turn texts); a turn's
    text is its messages, one per line. Raises ``DatasetError`` naming the file on a
    malformed conversation (or when the file is missing)."""
    name = f"memory_prereq_conversation/memory_{scenario}.json"
    out = []
    for conversation in _read_jsonl(name):
        if not isinstance(conversation, dict) or not isinstance(conversation.get("question"), list):
            raise DatasetError(f"{name}: malformed conversation {str(conversation)[:80]!r}")
        turns = ["\n".join(m["content"] for m in turn) for turn in conversation["question"]]
        out.append((conversation["id"], str(conversation.get("topic", "")), turns))
    return out


def _scenario_contexts(scenario: str) -> tuple[ContextResource, ...]:
    """One ``memory`` context per turn of the scenario's prior conversations, file order.

    Ids are ``<conversation id>-turn-<NN>``; content is the turn's messages, one per line.
    """
    return tuple(
        ContextResource.from_text(
            f"{cid}-turn-{j:02d}", content, SourceKind.MEMORY,
            metadata={"scenario": scenario, "conversation": cid, "turn": j, "topic": topic},
        )
        for cid, topic, turns in _scenario_conversations(scenario)
        for j, content in enumerate(turns)
    )


def _memory_answer(row: BfclRow) -> tuple[list[str], str]:
    """A memory row's accepted answers and ``source`` excerpt; ``_Skip("malformed_answer")``
    when they are not a non-empty list of strings and a string."""
    answer = row.extra["answer"]
    answers, source = answer.get("ground_truth"), answer.get("source")
    if (not isinstance(answers, list) or not answers
            or not all(isinstance(a, str) for a in answers) or not isinstance(source, str)):
        raise _Skip("malformed_answer")
    return answers, source


def _api_functions(api: str) -> list[BfclFunction]:
    out = []
    for i, fn in enumerate(_read_jsonl(f"multi_turn_func_doc/{api}.json")):
        if not isinstance(fn, dict) or "name" not in fn:
            raise DatasetError(f"multi_turn_func_doc/{api}.json line {i + 1}: no function name")
        params = bfcl_to_json_schema(fn.get("parameters", {}), f"{api}.{fn['name']}.parameters")
        out.append(BfclFunction(fn["name"], str(fn.get("description", "")), params))
    return out


def _distractor_apis() -> list[str]:
    docs = _data_root() / "multi_turn_func_doc"
    return sorted(p.name[:-5] for p in docs.iterdir()
                  if p.name.endswith(".json") and not p.name.startswith("memory_"))


def memory_suite(
    seed: int = 0,
    size: int | None = None,
    pool_size: int = DEFAULT_MEMORY_POOL_SIZE,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    backend: str = DEFAULT_MEMORY_BACKEND,
    suite: str = "bfcl-memory",
    split: str = "eval",
) -> SuiteBuild:
    """``bfcl-memory``: answer a question about the user from earlier conversations.

    Contexts: every turn of the scenario's prior conversations (see
    ``_scenario_contexts``). Tools: the ``backend`` memory API (``memory_kv``,
    ``memory_vector`` or ``memory_rec_sum``) plus seeded distractors from the other
    multi-turn APIs, ``pool_size`` in all, ordered by id. Gold contexts: the turns that
    ``match_source_turns`` finds for the answer's ``source``. Verifier ``context_answer``
    with the accepted answers. Extra skip reasons: ``unknown_scenario``,
    ``malformed_answer``, ``source_not_found``, ``answer_not_in_source_turn`` (no accepted
    answer occurs, case- and whitespace-normalised, in a gold turn: the verifier could not
    credit a correct exposure, e.g. "05:30 AM" against "5:30 AM"). The verifier matches
    substrings, so a short answer ("Michael", "35") also occurs in other turns;
    ``metadata["answer_turns"]`` counts the turns that would satisfy it (context recall
    against the gold turns is the stricter measure).
    """
    if backend not in _MEMORY_APIS:
        raise ValueError(f"unknown memory backend {backend!r}; valid: {', '.join(_MEMORY_APIS)}")
    loaded = load_category("memory", require_functions=False)
    api = _api_functions(backend)
    api_names = [f.name for f in api]
    catalog: dict[str, BfclFunction] = {}
    for name in _distractor_apis():
        for fn in _api_functions(name):
            catalog.setdefault(fn.name, fn)
    scenarios: dict[str, tuple[tuple[ContextResource, ...], list[str]]] = {}
    cache = _ToolCache()

    def make_task(row: BfclRow) -> BenchmarkTask:
        scenario = row.extra.get("scenario")
        if not isinstance(scenario, str):
            raise _Skip("unknown_scenario")
        if scenario not in scenarios:
            try:
                contexts = _scenario_contexts(scenario)
                scenarios[scenario] = (contexts, [normalise_answer(c.content) for c in contexts])
            except DatasetError:
                raise _Skip("unknown_scenario") from None
        contexts, normalised_contents = scenarios[scenario]
        answers, source = _memory_answer(row)
        hits, rule = match_source_turns(source, [c.content for c in contexts])
        if not hits:
            raise _Skip("source_not_found")
        normalised = [normalise_answer(a) for a in answers if a.strip()]
        holds = [i for i, content in enumerate(normalised_contents)
                 if any(a in content for a in normalised)]
        if not set(hits) & set(holds):
            raise _Skip("answer_not_in_source_turn")
        extra = _distractors(catalog, api_names, pool_size - len(api), suite, seed, row.id)
        tools = cache.tools((*api, *extra))
        return BenchmarkTask(
            task_id=f"{suite}-{row.id}",
            suite=suite,
            objective=row.objective,
            contexts=contexts,
            tools=tools,
            budget=Budget(max_tokens=max_tokens),
            gold_context_ids=tuple(contexts[i].id for i in hits),
            verifier=VerifierSpec(kind="context_answer", params={"answers": answers}),
            metadata={"bfcl_id": row.id, "bfcl_category": "memory", "scenario": scenario,
                      "source": source, "source_match": rule, "memory_backend": backend,
                      "answer_turns": len(holds), "listed_tool_ids": sorted(api_names)},
        )

    return _build(loaded, suite, seed, size, make_task,
                  f"{backend} + distractors = {pool_size} tools, budget {max_tokens} tokens",
                  split)


# --------------------------------------------------------------------------- memory pages

PAGE_TOP_K = 5
"""Chunks the page strategies admit per task (``junction.pages.admission.DEFAULT_TOP_K``'s
five)."""

PAGE_CHUNK_TOKENS = DEFAULT_MAX_TOKENS // PAGE_TOP_K
"""Largest chunk of a memory page (tokens): 1024 // 5 = 204, so ``PAGE_TOP_K`` whole chunks
always fit the task's ``DEFAULT_MAX_TOKENS`` budget."""

PAGE_POOL_LIMIT = 16
"""Chunks per task handed to a strategy (the BM25 top 16): the judge scores each of them,
about 16 × 64 document tokens per task (``STRATEGY_JUDGE_CONFIG``)."""

PAGE_MIN_BUDGETS = 4
"""A page must cost more than this many task budgets, so admission has to choose: the
notetaker scenario's page (780 tokens) fits the budget whole and is skipped
(``page_within_budget``); the others cost 5 to 20 budgets."""


def _turn_html(turn: str) -> str:
    """One turn as a paragraph: its messages (one per line) HTML-escaped, ``<br>`` between."""
    return "<p>" + "<br>".join(html.escape(m) for m in turn.split("\n")) + "</p>"


def scenario_page_html(scenario: str) -> str:
    """The scenario's prior conversations as one HTML page: per conversation an ``h1``
    holding its topic (its id when the topic is empty), then one ``p`` per turn (a turn's
    messages separated by ``<br>``). The words are the dataset's; the markup is ours and
    the text is HTML-escaped. Raises ``DatasetError`` as ``_scenario_conversations``."""
    parts = [f"<!DOCTYPE html>\n<html><head><title>{html.escape(scenario)}</title></head><body>"]
    for cid, topic, turns in _scenario_conversations(scenario):
        parts.append(f"<h1>{html.escape(topic.strip() or cid)}</h1>")
        for turn in turns:
            parts.append(_turn_html(turn))
    parts.append("</body></html>")
    return "\n".join(parts)


@dataclass(frozen=True)
class _Page:
    """A scenario's page: its chunks as contexts, each turn's span in the page text, the
    turn texts and the contexts' normalised contents (for the answer check)."""

    contexts: tuple[ContextResource, ...]
    chunks: tuple[Chunk, ...]
    turn_spans: tuple[tuple[int, int], ...]
    turns: tuple[str, ...]
    normalised: tuple[str, ...]
    tokens: int


def _scenario_page(scenario: str, chunk_tokens: int) -> _Page:
    """Chunk the scenario's page; locate every turn's paragraph in the page text.

    Context ids are ``memory-<scenario>#c<NNN>`` (chunk index); metadata: ``page_id``,
    ``heading_path``, ``chunk_index``, ``start``/``end`` (character offsets in the page
    text), ``cut`` and ``scenario``: nothing from the answer file.
    """
    page_id = f"memory-{scenario}"
    page = chunk_page(scenario_page_html(scenario), max_tokens=chunk_tokens)
    contexts = tuple(
        ContextResource(
            id=f"{page_id}#c{c.index:03d}", content=c.text, token_cost=c.token_cost,
            source=SourceKind.MEMORY,
            metadata={"page_id": page_id, "heading_path": c.heading_path,
                      "chunk_index": c.index, "start": c.start, "end": c.end, "cut": c.cut,
                      "scenario": scenario})
        for c in page.chunks)
    turns = [t for _, _, ts in _scenario_conversations(scenario) for t in ts]
    spans, cursor = [], 0
    for turn in turns:  # a turn's paragraph, as the chunker wrote it into the page text
        paragraph = chunk_page(_turn_html(turn)).text
        at = page.text.find(paragraph, cursor) if paragraph else -1
        if at < 0:
            spans.append((-1, -1))
            continue
        spans.append((at, at + len(paragraph)))
        cursor = at + len(paragraph)
    return _Page(contexts, page.chunks, tuple(spans), tuple(turns),
                 tuple(normalise_answer(c.content) for c in contexts),
                 sum(c.token_cost for c in page.chunks))


def memory_pages_suite(
    seed: int = 0,
    size: int | None = None,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    chunk_tokens: int = PAGE_CHUNK_TOKENS,
    suite: str = "bfcl-memory-pages",
    split: str = "eval",
) -> SuiteBuild:
    """``bfcl-memory-pages``: answer a question about the user from one long page.

    Per memory row: the scenario's prior conversations rendered as one HTML page
    (``scenario_page_html``) and chunked (``junction.pages.chunking.chunk_page``, chunks of at
    most ``chunk_tokens``); every chunk is a ``memory`` context (``_scenario_page``); no
    tools; budget ``max_tokens`` visible tokens. Gold contexts: the chunks that overlap a
    turn holding the answer's ``source`` excerpt (``match_source_turns`` over the turns).
    Verifier ``context_answer``: an exposed chunk contains an accepted answer. Skip
    reasons, beside the memory suite's (``unknown_scenario``, ``malformed_answer``,
    ``source_not_found``): ``page_within_budget`` (the page costs at most
    ``PAGE_MIN_BUDGETS`` budgets), ``turn_not_in_page`` (a gold turn's paragraph was not
    found in the page text), ``answer_not_in_source_chunk`` (no accepted answer occurs in a
    gold chunk). ``bfcl_category`` is ``memory_pages``: the agent and the references,
    which read a BFCL memory row's tools, do not run on it. ``split``: the memory rows'
    part (``split_of``, the same rows as ``bfcl-memory``'s).
    """
    loaded = load_category("memory", require_functions=False)
    pages: dict[str, _Page | None] = {}

    def make_task(row: BfclRow) -> BenchmarkTask:
        scenario = row.extra.get("scenario")
        if not isinstance(scenario, str):
            raise _Skip("unknown_scenario")
        if scenario not in pages:
            try:
                pages[scenario] = _scenario_page(scenario, chunk_tokens)
            except DatasetError:
                pages[scenario] = None
        page = pages[scenario]
        if page is None:
            raise _Skip("unknown_scenario")
        answers, source = _memory_answer(row)
        if page.tokens <= PAGE_MIN_BUDGETS * max_tokens:
            raise _Skip("page_within_budget")
        hits, rule = match_source_turns(source, page.turns)
        if not hits:
            raise _Skip("source_not_found")
        if any(page.turn_spans[i][0] < 0 for i in hits):
            raise _Skip("turn_not_in_page")
        gold = [k for k, c in enumerate(page.chunks)
                if any(c.start < page.turn_spans[i][1] and page.turn_spans[i][0] < c.end
                       for i in hits)]
        normalised = [normalise_answer(a) for a in answers if a.strip()]
        holds = [k for k, content in enumerate(page.normalised)
                 if any(a in content for a in normalised)]
        if not set(gold) & set(holds):
            raise _Skip("answer_not_in_source_chunk")
        return BenchmarkTask(
            task_id=f"{suite}-{row.id}",
            suite=suite,
            objective=row.objective,
            contexts=page.contexts,
            budget=Budget(max_tokens=max_tokens),
            gold_context_ids=tuple(page.contexts[k].id for k in gold),
            verifier=VerifierSpec(kind="context_answer", params={"answers": answers}),
            metadata={"bfcl_id": row.id, "bfcl_category": "memory_pages",
                      "scenario": scenario, "source": source, "source_match": rule,
                      "page_id": f"memory-{scenario}", "page_tokens": page.tokens,
                      "answer_chunks": len(holds)},
        )

    return _build(loaded, suite, seed, size, make_task,
                  f"one page per scenario, chunks of at most {chunk_tokens} tokens, "
                  f"budget {max_tokens} tokens", split)


# --------------------------------------------------------------------------- sub-tasks

_SENTENCE = re.compile(r"(?<=[.!?])\s+")
SUBTASK_KINDS = ("on_topic", "off_topic", "echo")
"""The proposals of a ``bfcl-subtasks`` task; only ``on_topic`` should be admitted."""


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text.strip()) if s.strip()]


def _longest_sentence(text: str) -> str:
    """The longest sentence of ``text`` (characters; the first of equals): an actual ask,
    where a first sentence is often a preamble ("Can you help me with two tasks?")."""
    return max(_sentences(text), key=len, default="")


def subtask_suite(
    seed: int = 0,
    size: int | None = None,
    category: str = "parallel_multiple",
    suite: str = "bfcl-subtasks",
) -> SuiteBuild:
    """``bfcl-subtasks``: which proposed sub-tasks of a BFCL request should be admitted.

    Per row of ``category`` (default ``parallel_multiple``: requests of two or more asks,
    "Find the area of ... Also, calculate ..."), the objective is the row's last user
    message (the original task, and the proposals' only ancestor) and the contexts are three
    proposed sub-tasks, the dataset's words only (``SUBTASK_KINDS``):

    - ``on_topic``: the request's longest sentence (``_longest_sentence``: a part of the
      task, so it follows from it and is not an echo of it), the one gold context;
    - ``off_topic``: the longest sentence of another row's request (seeded), which does not
      follow;
    - ``echo``: the whole request, copied verbatim (paraphrase-free): an echo of the ancestor.

    Context ids ``proposal-1`` .. ``proposal-3`` are dealt in a seeded order, so neither an
    id nor a position tells the kinds apart (``metadata["proposals"]``, id -> kind, stays in
    the task's metadata, out of the router view); contexts carry no metadata. Budget: the
    three proposals' tokens (admission, not the budget, decides). Verifier
    ``contexts_exact``: success when exactly the on-topic proposal is exposed; context
    precision and recall are the precision and recall of the admit decision. Skip reasons
    beside ``load_category``'s: ``one_sentence`` (nothing to split off), ``no_off_topic``
    (no other row's longest sentence is foreign to the request).
    """
    loaded = load_category(category)
    firsts = {}
    for row in loaded.rows:
        users = [content for role, content in row.messages if role == "user"]
        if users and _sentences(users[-1]):
            firsts[row.id] = _longest_sentence(users[-1])

    def make_task(row: BfclRow) -> BenchmarkTask:
        request = [content for role, content in row.messages if role == "user"][-1].strip()
        sentences = _sentences(request)
        if len(sentences) < 2:
            raise _Skip("one_sentence")
        others = sorted(rid for rid, first in firsts.items()
                        if rid != row.id and normalise_answer(first) not in
                        normalise_answer(request))
        if not others:
            raise _Skip("no_off_topic")
        rng = _rng("subtasks", suite, seed, row.id)
        texts = {"on_topic": firsts[row.id], "off_topic": firsts[rng.choice(others)],
                 "echo": request}
        kinds = list(SUBTASK_KINDS)
        rng.shuffle(kinds)
        ids = {kind: f"proposal-{i + 1}" for i, kind in enumerate(kinds)}
        contexts = tuple(ContextResource.from_text(ids[k], texts[k]) for k in kinds)
        return BenchmarkTask(
            task_id=f"{suite}-{row.id}",
            suite=suite,
            objective=request,
            contexts=contexts,
            budget=Budget(max_tokens=sum(c.token_cost for c in contexts)),
            gold_context_ids=(ids["on_topic"],),
            verifier=VerifierSpec(kind="contexts_exact"),
            metadata={"bfcl_id": row.id, "bfcl_category": f"subtasks_{category}",
                      "proposals": {ids[k]: k for k in kinds}},
        )

    # every row (split "all"): nothing learns on this suite, and its off-topic proposals are
    # drawn from every row's request
    return _build(loaded, suite, seed, size, make_task,
                  "3 proposed sub-tasks per request: on-topic, off-topic, echo", "all")
