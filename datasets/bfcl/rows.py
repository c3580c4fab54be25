"""BFCL rows: the data package (``bfcl_eval``, pinned to ``BFCL_VERSION``), the row
records, and the parsing of a category file into rows or skip reasons
(``load_category``), shared by the family modules.

See the package docstring (``junction_datasets.bfcl``) for the data format.
"""

from __future__ import annotations

import importlib.metadata
import importlib.resources
import json
import warnings
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from junction_datasets.bfcl.schemas import bfcl_to_json_schema

from junction.errors import DatasetError
from junction.resources import ToolResource

BFCL_VERSION = "2026.3.23"
"""The ``bfcl-eval`` version whose data shapes this module was written against."""
_DATA_PACKAGE = "bfcl_eval"
_PREFIX = "BFCL_v4_"


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
