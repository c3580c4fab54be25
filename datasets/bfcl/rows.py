"""BFCL rows: the data package, constants, the train / evaluation split, schemas, row parsing and seeded sampling (shared by the family modules).

See the package docstring (``junction_datasets.bfcl``) for the data format.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.resources
import json
import random
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any


from junction_datasets.registry import SuiteBuild
from junction.errors import DatasetError
from junction.resources import ToolResource
from junction.tasks import BenchmarkTask


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
