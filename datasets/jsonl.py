"""Suites from a JSON Lines file: one ``BenchmarkTask`` object per line.

Every line is validated before any task is returned (a NUL byte, or a string holding binary
content, is refused as "binary content at byte N"); the first bad line raises
``DatasetError`` naming the file, the line number, the task id (when readable) and the
field, so a malformed suite is refused whole and nothing downstream is written. A JSON
boolean where a number belongs (``"token_cost": true``) is refused naming the field, not
read as 1. A file that is one JSON array or object over several lines (pretty-printed) is
refused with the hint that the format is JSON Lines, one task object per line. All tasks
of a file must share one ``suite`` name, and task ids must be unique;
``check_suite_files`` also refuses a suite name a registered suite or another file has.

A file declares its own reference set: ``"reference_set": "bfcl"`` beside a line's task
fields names the reference strategies that run on its tasks (those whose catalog record
has that ``reference_set``, ``junction.strategies.catalog.StrategyInfo``; e.g. ``bfcl``:
``bfcl_listed``, ``all_tools``, which read a BFCL row's listing). Every line of the file
gives the same value, or none does (no references); ``SuiteBuild.reference_set`` holds it,
and ``check_suite_files`` refuses a set no strategy record has.
The fields of a line are ``junction.tasks.BenchmarkTask``'s (docs/extending.md lists
them); a context's ``token_cost`` or a tool's ``schema_token_cost`` left out is computed
by the project's token counter (``price_missing_costs``).

Pages: a context may be an HTML page, ``{"id": "guide", "format": "html", "content":
"<html>...", "source": "policy", "metadata": {...}}`` (no ``token_cost``). It is chunked at
load (``junction.pages.chunking.chunk_page``, default chunk limits) and each chunk becomes a
context ``<id>#c<NNN>`` (chunk index, from 000) whose content is the chunk's verbatim text,
priced by ``DEFAULT_TOKEN_COUNTER`` like every other context, with the page's ``source``
and its metadata plus ``page_id``, ``heading_path``, ``chunk_index``, ``start``/``end``
(character offsets in the page text) and ``cut``. Gold ids, unary priors and interactions
name chunk ids; naming the page id itself is refused with the page's chunk ids. ``format``
is ``"text"`` (the default: the context as written) or ``"html"``.
"""

from __future__ import annotations

import json
from pathlib import Path

from junction_datasets.registry import SuiteBuild
from pydantic import ValidationError

from junction.errors import DatasetError, JunctionError
from junction.evidence.locks import check_name
from junction.pages.chunking import ChunkingError, chunk_page
from junction.resources import schema_token_cost
from junction.tasks import BenchmarkTask
from junction.text import binary_offset
from junction.tokens import DEFAULT_TOKEN_COUNTER

__all__ = ["CONTEXT_FORMATS", "MAX_LINE_BYTES", "check_suite_files", "expand_html_contexts",
           "load_suite_file", "price_missing_costs"]

CONTEXT_FORMATS = ("text", "html")
"""Values of a context's ``format`` field in a suite file."""
_PAGE_KEYS = {"id", "format", "content", "source", "metadata"}

MAX_LINE_BYTES = 16 * 1024 * 1024
"""Longest line accepted (bytes): a task past 16 MiB is refused, not read."""


def _refuse_constant(name: str) -> float:
    raise ValueError(f"non-finite number {name} is not allowed")


def _page_contexts(i: int, raw: dict) -> list[dict]:
    """The chunk contexts of one ``"format": "html"`` context (module docstring)."""
    where = f"contexts[{i}]"
    extra = sorted(set(raw) - _PAGE_KEYS)
    if extra:
        raise ValueError(f"{where}: field {extra[0]!r} is not allowed with format html "
                         f"(allowed: {', '.join(sorted(_PAGE_KEYS))}; chunks are priced by "
                         "the token counter)")
    page_id, html = raw.get("id"), raw.get("content")
    if not isinstance(page_id, str) or not page_id.strip():
        raise ValueError(f"{where}.id: an html page needs a non-empty string id, got {page_id!r}")
    if not isinstance(html, str):
        raise ValueError(f"{where}.content: an html page's content must be a string, got "
                         f"{type(html).__name__}")
    metadata = raw.get("metadata", {})
    if not isinstance(metadata, dict):
        raise ValueError(f"{where}.metadata: must be an object, got {type(metadata).__name__}")
    try:
        chunks = chunk_page(html).chunks
    except ChunkingError as exc:
        raise ValueError(f"{where}: {exc}") from None
    if not chunks:
        raise ValueError(f"{where}: html page {page_id!r} has no visible text")
    out = []
    for c in chunks:
        chunk = {"id": f"{page_id}#c{c.index:03d}", "content": c.text,
                 "token_cost": c.token_cost,
                 "metadata": {**metadata, "page_id": page_id, "heading_path": c.heading_path,
                              "chunk_index": c.index, "start": c.start, "end": c.end,
                              "cut": c.cut}}
        if "source" in raw:
            chunk["source"] = raw["source"]
        out.append(chunk)
    return out


def expand_html_contexts(obj: dict) -> dict:
    """``obj`` (one task, as parsed JSON) with each ``"format": "html"`` context replaced by
    its chunk contexts and ``"format": "text"`` dropped (module docstring).

    Returns ``obj`` itself when no context names a format. Raises ``ValueError`` naming
    ``contexts[i]`` and the field for an unknown format, a field an html page cannot have,
    a page with no visible text, or a gold id, prior or interaction naming a page id.
    """
    contexts = obj.get("contexts")
    if not isinstance(contexts, list) or not any(
            isinstance(c, dict) and "format" in c for c in contexts):
        return obj
    expanded: list = []
    pages: dict[str, list[str]] = {}
    for i, raw in enumerate(contexts):
        fmt = raw.get("format", "text") if isinstance(raw, dict) else "text"
        if fmt not in CONTEXT_FORMATS:
            raise ValueError(f"contexts[{i}].format: must be one of "
                             f"{', '.join(CONTEXT_FORMATS)}, got {fmt!r}")
        if fmt == "text":
            expanded.append({k: v for k, v in raw.items() if k != "format"}
                            if isinstance(raw, dict) else raw)
            continue
        chunks = _page_contexts(i, raw)
        pages[raw["id"]] = [c["id"] for c in chunks]
        expanded.extend(chunks)
    gold, unary, pairs = (obj.get(k) for k in ("gold_context_ids", "unary", "interactions"))
    named = [("gold_context_ids", rid) for rid in (gold if isinstance(gold, list) else ())]
    named += [("unary", rid) for rid in (unary if isinstance(unary, dict) else ())]
    named += [("interactions", pair.get(end)) for pair in (pairs if isinstance(pairs, list)
                                                           else ())
              if isinstance(pair, dict) for end in ("source", "target")]
    for field, rid in named:
        if isinstance(rid, str) and rid in pages:
            shown = ", ".join(pages[rid][:3]) + (", ..." if len(pages[rid]) > 3 else "")
            raise ValueError(f"{field} names html page {rid!r}; name its chunks instead "
                             f"({shown}; {len(pages[rid])} in all)")
    return {**obj, "contexts": expanded}


def _binary_field(value: object, where: str = "") -> tuple[str, int] | None:
    """The first string of a parsed task (depth first, in order) holding binary content
    (``junction.text.binary_offset``: a NUL, e.g. written ``\\u0000``, or mostly control
    characters), as (field path, byte offset in that string); None if there is none."""
    if isinstance(value, str):
        offset = binary_offset(value)
        return None if offset is None else (where or "task", offset)
    items = (value.items() if isinstance(value, dict) else
             enumerate(value) if isinstance(value, list) else ())
    for key, item in items:
        found = _binary_field(item, f"{where}[{key}]" if isinstance(key, int) else
                              f"{where}.{key}" if where else str(key))
        if found is not None:
            return found
    return None


def _has_bool(value: object) -> bool:
    if isinstance(value, bool):
        return True
    items = (value.values() if isinstance(value, dict) else
             value if isinstance(value, list) else ())
    return any(_has_bool(item) for item in items)


def _bool_number(raw: object, validated: object, where: str = "") -> tuple[str, bool] | None:
    """The first place (field path, as pydantic names it: ``contexts.0.token_cost``; the
    value) where ``raw`` (a parsed line) holds a JSON boolean and ``validated`` (the same
    task as validated, ``model_dump``) a number: pydantic reads ``true`` as 1 there. None
    when there is none (a boolean kept as a boolean, in ``metadata`` say, is fine)."""
    if isinstance(raw, bool):
        number = isinstance(validated, (int, float)) and not isinstance(validated, bool)
        return (where or "task", raw) if number else None
    if isinstance(raw, dict) and isinstance(validated, dict):
        pairs = [(str(k), raw[k], validated[k]) for k in raw if k in validated]
    elif isinstance(raw, list) and isinstance(validated, (list, tuple)) \
            and len(raw) == len(validated):
        pairs = [(str(i), a, b) for i, (a, b) in enumerate(zip(raw, validated, strict=True))]
    else:
        return None
    for key, a, b in pairs:
        found = _bool_number(a, b, f"{where}.{key}" if where else key)
        if found is not None:
            return found
    return None


def _unclosed(text: str, exc: ValueError) -> str | None:
    """``"array"`` or ``"object"`` when ``text`` (a line) opens a JSON array or object,
    ends as a pretty-printer breaks a line (after ``[``, ``{``, ``,`` or ``:``) and the
    error ``exc`` is at its end (the value goes on past the line); None otherwise (a
    mistake inside one line's value, or a line cut short)."""
    line = text.strip()
    kind = {"[": "array", "{": "object"}.get(line[:1])
    pos = getattr(exc, "pos", None)
    if kind is None or not line.endswith(("[", "{", ",", ":")) or not isinstance(pos, int):
        return None
    return kind if pos >= len(text.rstrip()) else None


def price_missing_costs(obj: dict) -> dict:
    """``obj`` (one task, as parsed JSON) with every cost it leaves out computed by the
    project's counter (``DEFAULT_TOKEN_COUNTER``, tokens): a context's ``token_cost`` from
    its ``content`` (as ``ContextResource.from_text``), a tool's ``schema_token_cost`` from
    its rendered schema (as ``ToolResource.from_schema``). A cost given is kept; an entry
    whose text is not a string is left for validation to name."""
    def context(c: object) -> object:
        if isinstance(c, dict) and "token_cost" not in c and isinstance(c.get("content"), str):
            return {**c, "token_cost": DEFAULT_TOKEN_COUNTER.count(c["content"])}
        return c

    def tool(t: object) -> object:
        if (isinstance(t, dict) and "schema_token_cost" not in t
                and isinstance(t.get("id"), str) and isinstance(t.get("description"), str)
                and isinstance(t.get("json_schema", {}), dict)):
            return {**t, "schema_token_cost": schema_token_cost(
                t["id"], t["description"], t.get("json_schema", {}))}
        return t

    out = dict(obj)
    if isinstance(obj.get("contexts"), list):
        out["contexts"] = [context(c) for c in obj["contexts"]]
    if isinstance(obj.get("tools"), list):
        out["tools"] = [tool(t) for t in obj["tools"]]
    return out


def load_suite_file(path: str | Path, size: int | None = None) -> SuiteBuild:
    """Load and validate every task of ``path``; keep the first ``size`` (None: all).

    Raises ``DatasetError`` (file, line, task id, field) on the first bad line, an empty
    file, mixed suite names or reference sets (module docstring), or a duplicate task id.
    """
    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"{path}: no such suite file")
    tasks: list[BenchmarkTask] = []
    reference_set: str | None = None  # the file's, as its first task's line declares it
    first_line = 0
    seen: dict[str, int] = {}
    position = 0  # byte offset of the line in the file
    opening = True  # no non-blank line read yet
    with path.open("rb") as handle:
        for line_no, raw in enumerate(handle, start=1):
            start, position = position, position + len(raw)
            if len(raw) > MAX_LINE_BYTES:
                raise DatasetError(f"{path}:{line_no}: line is {len(raw)} bytes; "
                                   f"the limit is {MAX_LINE_BYTES}")
            nul = raw.find(b"\0")
            if nul >= 0:
                raise DatasetError(f"{path}:{line_no}: binary content at byte {start + nul}; "
                                   "a suite file is JSON Lines text")
            if not raw.strip():
                continue
            try:
                text = raw.decode("utf-8")
                offset = binary_offset(text)  # mostly control characters: not JSON text
                if offset is not None:
                    raise DatasetError(f"{path}:{line_no}: binary content at byte "
                                       f"{start + offset}; a suite file is JSON Lines text")
                obj = json.loads(text, parse_constant=_refuse_constant)
            except (UnicodeDecodeError, ValueError) as exc:
                kind = _unclosed(text, exc) if opening else None
                if kind is not None:
                    raise DatasetError(
                        f"{path}:{line_no}: not JSON Lines: the JSON {kind} opened on this "
                        "line does not close on it (a pretty-printed file?); a suite file "
                        "holds one task object per line (e.g. jq -c "
                        f"{chr(39) + '.[]' + chr(39) if kind == 'array' else '.'} FILE)"
                    ) from None
                raise DatasetError(f"{path}:{line_no}: not valid JSON: {exc}") from None
            opening = False
            if isinstance(obj, list):
                raise DatasetError(f"{path}:{line_no}: expected a JSON object, got a JSON "
                                   "array; a suite file is JSON Lines: one task object per "
                                   "line, with no enclosing [ ]")
            if not isinstance(obj, dict):
                raise DatasetError(f"{path}:{line_no}: expected a JSON object, got "
                                   f"{type(obj).__name__}")
            task_id = obj.get("task_id", "?")
            binary = _binary_field(obj)
            if binary is not None:
                raise DatasetError(f"{path}:{line_no}: task {task_id!r}: {binary[0]}: binary "
                                   f"content at byte {binary[1]}")
            declared = obj.pop("reference_set", None)
            if declared is not None and (not isinstance(declared, str) or not declared):
                raise DatasetError(f"{path}:{line_no}: task {task_id!r}: reference_set: a "
                                   f"reference set's name is needed, got {declared!r}")
            if tasks and declared != reference_set:
                raise DatasetError(
                    f"{path}:{line_no}: task {task_id!r}: reference_set {declared!r} differs "
                    f"from {reference_set!r} on line {first_line}; every line of a file "
                    "declares the same reference set, or none does")
            reference_set, first_line = declared, first_line or line_no
            try:
                obj = price_missing_costs(expand_html_contexts(obj))
            except ValueError as exc:
                raise DatasetError(f"{path}:{line_no}: task {task_id!r}: {exc}") from None
            try:
                task = BenchmarkTask.model_validate(obj)
            except ValidationError as exc:
                first = exc.errors()[0]
                field = ".".join(str(p) for p in first["loc"]) or "task"
                shown = repr(first.get("input"))
                shown = shown if len(shown) <= 80 else shown[:77] + "..."
                raise DatasetError(
                    f"{path}:{line_no}: task {task_id!r}: {field}: {first['msg']} (got {shown})"
                ) from None
            if _has_bool(obj):  # pydantic's lax mode reads true as 1 in a number field
                flagged = _bool_number(obj, task.model_dump())
                if flagged is not None:
                    raise DatasetError(
                        f"{path}:{line_no}: task {task_id!r}: {flagged[0]}: a number is "
                        f"needed, got the JSON boolean {json.dumps(flagged[1])}")
            if task.task_id in seen:
                raise DatasetError(f"{path}:{line_no}: duplicate task id {task.task_id!r} "
                                   f"(first on line {seen[task.task_id]})")
            seen[task.task_id] = line_no
            if tasks and task.suite != tasks[0].suite:
                raise DatasetError(f"{path}:{line_no}: suite {task.suite!r} differs from "
                                   f"{tasks[0].suite!r} on line 1; one suite per file")
            tasks.append(task)
    if not tasks:
        raise DatasetError(f"{path}: no tasks")
    return SuiteBuild(tasks=tasks if size is None else tasks[:size], rows_loaded=len(tasks),
                      reference_set=reference_set)


def check_suite_files(paths: list[str] | list[Path]) -> list[SuiteBuild]:
    """Load every file of ``paths`` (``load_suite_file``, all tasks) and check its suite
    name (the tasks' ``suite``) as a run would: safe in a folder name
    (``junction.evidence.locks.check_name``), not a registered suite's
    (``junction.suites.SUITES``: the built-in suites and plug-ins'), not another file's,
    and its declared reference set (``SuiteBuild.reference_set``) one some strategy record
    has (``junction.strategies.catalog``).

    Returns the builds, in order. Raises ``DatasetError`` naming the file and the name
    (and ``load_suite_file``'s errors). A run calls it before Prefect starts or the run's
    lock is taken (``flows.preflight.prepare_run``), so a refusal writes nothing.
    """
    from junction.strategies.catalog import STRATEGIES
    from junction.suites import SUITES

    builds: list[SuiteBuild] = []
    owners: dict[str, str] = {}
    for path in paths:
        built = load_suite_file(path)
        name = built.tasks[0].suite
        try:
            check_name(name, f"suite of {path}")
        except JunctionError as exc:
            raise DatasetError(f"{path}: {exc}") from None
        if name in SUITES:
            raise DatasetError(f"{path}: suite name {name!r} is taken by a registered suite "
                               "(`junction suites` lists them); give the file's tasks another "
                               "\"suite\"")
        if name in owners:
            raise DatasetError(f"{path}: suite name {name!r} is also the suite of "
                               f"{owners[name]}; one file per suite name")
        known = sorted({info.reference_set for info in STRATEGIES.values()
                        if info.reference_set is not None})
        if built.reference_set is not None and built.reference_set not in known:
            raise DatasetError(f"{path}: reference_set {built.reference_set!r} is no "
                               f"strategy's; reference sets: {', '.join(known) or 'none'}")
        owners[name] = str(path)
        builds.append(built)
    return builds
