"""τ-Knowledge (tau2-bench ``banking_knowledge``) as the suite ``tau2-banking``.

The data is never shipped: the user names a folder with ``--data tau2-banking=PATH`` on
``junction bench`` (or its alias ``--tau2-data PATH``) or the environment variable
``JUNCTION_TAU2_DATA`` (``DATA_ENV``). It is either a tau2-bench checkout
(``data/tau2/domains/banking_knowledge/{tasks.json,documents/}`` and
``src/tau2/domains/banking_knowledge/tools.py``) or a flat folder holding
``tasks.json``, ``documents/`` and ``tools.py`` (the layout of the team's shared copy).
Source: github.com/sierra-research/tau2-bench (MIT); paper "τ-Knowledge", arXiv 2603.04370.

One task per tau2 task:

- contexts: every document, ``title`` + blank line + ``content``, priced by
  ``junction.tokens`` (``ContextResource.from_text``), source ``policy``, metadata
  ``topic`` = the id without ``doc_`` and its trailing ``_NNN``;
- tools: the agent tools of class ``KnowledgeTools`` in ``tools.py``, read with ``ast``
  (``parse_agent_tools``; the module imports tau2, so it is never imported); the customer
  tools of ``KnowledgeUserTools`` are not agent tools and are left out;
- objective: ``user_scenario.instructions`` (it holds facts the customer reveals only when
  asked: a retrieval study, not tau2's conversation protocol);
- gold (``resolve_gold``): tools from ``evaluation_criteria.actions``, contexts from
  ``required_documents``, pairs (required document, gold tool) where the document names
  the tool id verbatim (``BenchmarkTask.gold_pairs``, never in the router view);
- interactions: the lexical pair prior ``w(d, t) = NAMED_PAIR_WEIGHT`` for every document
  that names tool ``t`` verbatim (from the text every strategy sees, not from gold);
- budget: ``MAX_TOKENS`` visible tokens (fixed, never derived from gold);
- verifier ``tools_with_documents``: every gold tool exposed and, for each gold pair's
  tool, at least one exposed document naming it; its ``params["actions"]`` hold the gold
  agent actions (``junction.agent.tau2_grading.gold_actions``), which the agent grader
  ``tau2_actions`` matches the agent's calls against (the agent acts on the tasks that
  have one).

Tasks are read from ``tasks/task_*.json`` when that folder exists (the files tau2 itself
loads), else from ``tasks.json``; the suite note says which. A task with nothing to find
(no gold agent tool and no required document: the verifier would accept any exposed set,
the empty one included) is left out with one ``warning:`` line naming it, and the note
says how many (skip reason ``nothing_to_find``).

Errors: a missing folder, task source, ``documents/`` or ``tools.py`` raises
``DatasetError`` naming the path; a malformed ``Args:`` line names the tool.
"""

from __future__ import annotations

import ast
import json
import os
import re
import threading
import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from junction.agent.tau2_grading import gold_actions
from junction.budget import Budget
from junction.errors import DatasetError
from junction.resources import ContextResource, SourceKind, ToolResource
from junction.tasks import BenchmarkTask, GoldPair, Interaction, VerifierSpec
from junction.tokens import DEFAULT_TOKEN_COUNTER, TokenCounter

__all__ = [
    "CONTEXT_POOL",
    "DATA_ENV",
    "DEFAULT_SIZE",
    "DISPUTED_TASKS",
    "MAX_TOKENS",
    "NAMED_PAIR_WEIGHT",
    "POOL_LIMIT",
    "SUITE",
    "TASK_FILES",
    "TOOL_POOL",
    "AgentTool",
    "Tau2Data",
    "banking_suite",
    "data_folder",
    "load_data",
    "names_tool",
    "parse_agent_tools",
    "resolve_gold",
    "unavailable_reason",
]

SUITE = "tau2-banking"
TASK_FILES = "task_*.json"
"""The runtime task files in ``tasks/`` (tau2-bench
``data/tau2/domains/banking_knowledge/tasks/``)."""

DATA_ENV = "JUNCTION_TAU2_DATA"
"""Environment variable naming the data folder when a run does not (``--data
tau2-banking=PATH``, or its alias ``--tau2-data``)."""

REFERENCE_SET = "tau2"
"""The suite's reference set: the catalog's gold references (``gold_minimal``,
``gold_tools_only``, ``gold_tools_documents``) run on it."""

MAX_TOKENS = 4096
"""Visible-token budget at scale 1: about a third of a task's required documents (9.8 of
them, a few hundred tokens each) plus a handful of schemas fit, so documents and tools
compete; the 0.5/1/2 scales span the range where that trade-off changes."""

CONTEXT_POOL = 50
"""BM25 context candidates per task: the README's document recall@50 (about half of the
required documents) while 50 + 58 candidates keep the exact solver exact."""

TOOL_POOL = None
"""Tool candidates: all 58 agent tools (None: the whole lane); tool schemas are small."""

DEFAULT_SIZE = 24
"""Evaluation tasks in the default benchmark (a third of the 72; ``--full`` runs all):
the exact solves on 108 candidates at three scales keep the default run short."""

POOL_LIMIT = (CONTEXT_POOL, TOOL_POOL)
"""The suite's per-lane pool limit (contexts, tools) (``SuiteInfo.pool_limit``)."""

NAMED_PAIR_WEIGHT = 0.5
"""Lexical pair prior w(d, t) when document d names tool t's id verbatim: half the best
normalised BM25 unary (1.0), so a naming document and its tool gain together without the
pair outweighing a clearly better single candidate."""

DISPUTED_TASKS = frozenset({"task_026", "task_027", "task_046", "task_048", "task_053",
                            "task_065", "task_068", "task_069", "task_082", "task_083"})
"""tau2 task ids whose gold is disputed in tau2-bench's own issues and pull requests (the
shared copy's README, "Added later": e.g. 065/068/069 hash a free-text closure reason,
#484/#485; 026/027 need a read no tool provides, #439). Their tasks carry
``metadata["disputed"] = True``; reports give verdicts with and without them."""

_META_AGENT_TOOLS = frozenset({"unlock_discoverable_agent_tool", "call_discoverable_agent_tool",
                               "give_discoverable_user_tool", "list_discoverable_agent_tools"})
"""Agent tools that only handle discoverable tools: their actions name the gold tool in an
argument; they are in the pool but never gold themselves (a retrieval study exposes the
discoverable tool directly)."""

_AGENT_NAME_ACTIONS = ("unlock_discoverable_agent_tool", "call_discoverable_agent_tool")
_TYPES = {"str": "string", "string": "string", "int": "integer", "integer": "integer",
          "float": "number", "number": "number", "bool": "boolean", "boolean": "boolean",
          "dict": "object", "object": "object", "list": "array", "array": "array"}
_ARG_LINE = re.compile(r"^(?P<name>[A-Za-z_]\w*)\s*(?:\((?P<type>[^)]*)\))?\s*:\s*(?P<text>.*)$")
_SECTION = re.compile(r"^(Returns|Raises|Yields|Examples?|Notes?)\s*:\s*$")


@dataclass(frozen=True)
class AgentTool:
    """One agent tool: ``name``, the description before ``Args:`` and a JSON schema."""

    name: str
    description: str
    json_schema: dict[str, Any]
    discoverable: bool


@dataclass(frozen=True)
class Tau2Data:
    """A loaded banking_knowledge folder: tasks (raw dicts), documents by id, agent tools."""

    root: Path
    tasks: list[dict[str, Any]]
    documents: dict[str, tuple[str, str]]
    tools: list[AgentTool]
    task_source: Path
    """Where the tasks were read: the ``tasks/`` folder or ``tasks.json``."""

    @property
    def runtime_tasks(self) -> bool:
        """Whether the tasks come from ``tasks/task_*.json``, the files tau2 runs."""
        return self.task_source.is_dir()


def data_folder(path: str | os.PathLike[str] | None = None) -> Path | None:
    """The folder to read: ``path``, else ``$JUNCTION_TAU2_DATA``, else None (no data); a
    leading ``~`` is the user's home (a shell that did not expand it, a quoted value)."""
    chosen = path if path is not None else os.environ.get(DATA_ENV) or None
    return None if chosen is None else Path(chosen).expanduser()


def unavailable_reason(data: str | os.PathLike[str] | None = None) -> str | None:
    """One line saying why the suite cannot run and how to get the data; None when
    ``data`` (default ``$JUNCTION_TAU2_DATA``, ``data_folder``) names a folder
    ``load_data`` reads and at least one of its tasks can be built (instructions, every
    required document present). A run checks this before Prefect starts, so a wrong folder
    is refused at once (reading it takes a fraction of a second)."""
    root = data_folder(data)
    if root is None:
        return (f"{SUITE}: no data (set {DATA_ENV} or pass --data {SUITE}=PATH, PATH a "
                "clone of https://github.com/sierra-research/tau2-bench)")
    try:
        loaded = load_data(root)
    except DatasetError as exc:
        return str(exc)
    tool_ids = {t.name for t in loaded.tools}
    skipped = Counter(_skip_reason(raw, loaded.documents, tool_ids)[0] for raw in loaded.tasks)
    if None in skipped:
        return None
    return _no_task_line(loaded.task_source, skipped)


def _skip_reason(raw: dict[str, Any], documents: Mapping[str, Any],
                 agent_tools: set[str]) -> tuple[str | None, str | None]:
    """(why task ``raw`` cannot be built, the first required document it names that is not
    in ``documents``); (None, None) when it can. ``nothing_to_find``: no required document
    and no gold agent tool among ``agent_tools`` (``resolve_gold``), so every exposed set,
    the empty one included, would pass its verifier."""
    task_id = str(raw.get("id", ""))
    instructions = ((raw.get("user_scenario") or {}).get("instructions") or "")
    if not isinstance(instructions, str) or not instructions.strip() or not task_id:
        return "no_instructions", None
    required = raw.get("required_documents") or []
    unknown = [str(d) for d in required if str(d) not in documents]
    if unknown:
        return "unknown_required_document", unknown[0]
    actions = (raw.get("evaluation_criteria") or {}).get("actions") or []
    if not required and not resolve_gold(actions, agent_tools):
        return "nothing_to_find", None
    return None, None


def _listed(ids: Sequence[str], limit: int = 10) -> str:
    """``ids`` joined by commas, the first ``limit`` and how many more."""
    shown = ", ".join(ids[:limit])
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def _no_task_line(source: Path,
                  skipped: Mapping[str, int] | Mapping[str | None, int]) -> str:
    return (f"{source}: no task could be loaded (skipped: "
            + ", ".join(f"{k} {v}" for k, v in sorted(skipped.items()) if k) + ")")


def _layout(root: Path) -> tuple[Path, Path]:
    """(domain folder with tasks.json + documents/, tools.py) for a checkout or a flat copy."""
    if not root.is_dir():
        raise DatasetError(f"{root}: tau2 data folder not found (set {DATA_ENV} or "
                           f"--data {SUITE}=PATH)")
    nested = root / "data" / "tau2" / "domains" / "banking_knowledge"
    if nested.is_dir():
        return nested, root / "src" / "tau2" / "domains" / "banking_knowledge" / "tools.py"
    return root, root / "tools.py"


def _files(root: Path) -> tuple[Path, Path, Path]:
    """(task source, documents/, tools.py) under ``root``; the task source is the folder
    ``tasks/`` when it exists (``TASK_FILES``: what tau2 runs), else ``tasks.json``.
    ``DatasetError`` naming the first path that is missing."""
    domain, tools_py = _layout(root)
    runtime, docs_path = domain / "tasks", domain / "documents"
    tasks_path = runtime if runtime.is_dir() else domain / "tasks.json"
    for needed in (tasks_path, docs_path, tools_py):
        if not needed.exists():
            raise DatasetError(f"{needed}: missing (expected a tau2-bench banking_knowledge "
                               "folder: tasks/ or tasks.json, documents/, tools.py)")
    if not docs_path.is_dir():
        raise DatasetError(f"{docs_path}: not a folder")
    if next(docs_path.glob("*.json"), None) is None:
        raise DatasetError(f"{docs_path}: no document files (*.json)")
    return tasks_path, docs_path, tools_py


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DatasetError(f"{path}: not readable JSON ({exc})") from None


def _read_tasks(tasks_path: Path) -> list[dict[str, Any]]:
    """The raw tasks of ``tasks_path``: every ``task_*.json`` of a ``tasks/`` folder (one
    task object each, in file-name order) or the list in ``tasks.json``. ``DatasetError``
    naming the file that is not a task object / list."""
    if tasks_path.is_dir():
        files = sorted(tasks_path.glob(TASK_FILES))
        if not files:
            raise DatasetError(f"{tasks_path}: no {TASK_FILES} files")
        tasks = []
        for file in files:
            raw = _read_json(file)
            if not isinstance(raw, dict):
                raise DatasetError(f"{file}: expected one JSON task object")
            tasks.append(raw)
        return tasks
    tasks = _read_json(tasks_path)
    if not isinstance(tasks, list):
        raise DatasetError(f"{tasks_path}: expected a JSON list of tasks")
    return tasks


def load_data(path: str | os.PathLike[str] | None = None) -> Tau2Data:
    """Read tasks, documents and agent tools from ``path`` (default: ``data_folder()``).

    Tasks come from ``tasks/task_*.json`` where that folder exists (the files tau2 loads;
    they differ from ``tasks.json`` on 13 of 97 tasks in required documents, gold amounts
    and one assertion, shared copy's README "Added later"), else from ``tasks.json``.

    Raises ``DatasetError`` naming the path: no folder given, folder, ``tasks.json``,
    ``documents/`` or ``tools.py`` missing, or a file that is not the expected JSON.
    """
    root = data_folder(path)
    if root is None:
        raise DatasetError(unavailable_reason() or f"{SUITE}: no data folder")
    tasks_path, docs_path, tools_py = _files(root)
    tasks = _read_tasks(tasks_path)
    documents: dict[str, tuple[str, str]] = {}
    for file in sorted(docs_path.glob("*.json")):
        try:
            raw = json.loads(file.read_text(encoding="utf-8"))
            documents[str(raw["id"])] = (str(raw.get("title", "")), str(raw["content"]))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise DatasetError(f"{file}: not a document (id, title, content): {exc}") from None
    return Tau2Data(root=root, tasks=tasks, documents=documents,
                    tools=parse_agent_tools(tools_py.read_text(encoding="utf-8"), str(tools_py)),
                    task_source=tasks_path)


def _json_type(annotation: str | None) -> str:
    if not annotation:
        return "string"
    text = annotation.strip().lower()
    for key in ("optional[", "typing."):
        text = text.replace(key, "")
    head = re.split(r"[\[|, \]]", text)[0]
    if head == "literal" or head.endswith("literal"):
        return "string"
    return _TYPES.get(head, "string")


def _parse_args(doc: str, tool: str) -> tuple[str, dict[str, tuple[str | None, str]]]:
    """(description before ``Args:``, {arg: (docstring type or None, text)})."""
    lines = doc.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.strip() == "Args:"), None)
    end_desc = start if start is not None else next(
        (i for i, ln in enumerate(lines) if _SECTION.match(ln.strip())), len(lines))
    description = " ".join(ln.strip() for ln in lines[:end_desc] if ln.strip())
    args: dict[str, tuple[str | None, str]] = {}
    if start is None:
        return description, args
    indent: int | None = None
    last: str | None = None
    for ln in lines[start + 1:]:
        if not ln.strip():
            continue
        if _SECTION.match(ln.strip()):
            break
        here = len(ln) - len(ln.lstrip())
        if indent is None:
            indent = here
        if here > indent and last is not None:
            kind, text = args[last]
            args[last] = (kind, f"{text} {ln.strip()}")
            continue
        if here < indent:
            break
        m = _ARG_LINE.match(ln.strip())
        if m is None:
            raise DatasetError(f"tool {tool!r}: malformed Args line {ln.strip()!r} "
                               "(expected 'name (type): text' or 'name: text')")
        last = m["name"]
        args[last] = (m["type"], m["text"].strip())
    return description, args


def parse_agent_tools(source: str, filename: str = "tools.py",
                      class_name: str = "KnowledgeTools") -> list[AgentTool]:
    """The tools of ``class_name`` in ``source`` (methods decorated ``@is_tool(...)`` or
    ``@is_discoverable_tool(...)``), in file order, parsed with ``ast`` (never imported).

    Schema: ``{"type": "object", "properties": {arg: {"type", "description"}},
    "required": [args without a default]}``; the type is the docstring's ``(type)`` when
    given, else the signature's annotation, mapped to JSON types (``string`` otherwise).
    Raises ``DatasetError`` naming ``filename`` (syntax error, no such class) or the tool
    (malformed ``Args:`` line, an argument the signature does not have).
    """
    try:
        module = ast.parse(source, filename=filename)
    except SyntaxError as exc:
        raise DatasetError(
            f"{filename}: not parseable Python ({exc.msg}, line {exc.lineno})") from None
    classes = [n for n in module.body if isinstance(n, ast.ClassDef) and n.name == class_name]
    if not classes:
        raise DatasetError(f"{filename}: no class {class_name}")
    tools: list[AgentTool] = []
    for node in classes[0].body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        marks = [ast.unparse(d.func if isinstance(d, ast.Call) else d) for d in node.decorator_list]
        if not {"is_tool", "is_discoverable_tool"} & set(marks):
            continue
        description, doc_args = _parse_args(ast.get_docstring(node) or "", node.name)
        params = [a for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)
                  if a.arg not in ("self", "cls")]
        positional = [*node.args.posonlyargs, *node.args.args]
        n_default = len(node.args.defaults)
        defaulted = ({a.arg for a in positional[len(positional) - n_default:]}
                     if n_default else set())
        defaulted |= {a.arg for a, d in zip(node.args.kwonlyargs, node.args.kw_defaults,
                                            strict=True)
                      if d is not None}
        names = [a.arg for a in params]
        for arg in doc_args:
            if arg not in names:
                raise DatasetError(f"tool {node.name!r}: Args names {arg!r}, which the "
                                   "signature does not have")
        properties: dict[str, Any] = {}
        for a in params:
            kind, text = doc_args.get(a.arg, (None, ""))
            annotation = ast.unparse(a.annotation) if a.annotation is not None else None
            properties[a.arg] = {"type": _json_type(kind or annotation), "description": text}
        schema = {"type": "object", "properties": properties,
                  "required": [n for n in names if n not in defaulted]}
        tools.append(AgentTool(node.name, description or node.name, schema,
                               "is_discoverable_tool" in marks))
    return tools


def names_tool(text: str, tool_id: str) -> bool:
    """Whether ``text`` names ``tool_id`` verbatim (as a whole identifier)."""
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(tool_id)}(?![A-Za-z0-9_])", text) is not None


def resolve_gold(actions: Sequence[Mapping[str, Any]], agent_tools: set[str]) -> tuple[str, ...]:
    """Gold agent tools of a task, in first-action order, from its
    ``evaluation_criteria.actions``.

    ``unlock_discoverable_agent_tool`` / ``call_discoverable_agent_tool``: the tool named by
    ``arguments.agent_tool_name``; a direct call of an agent tool (``log_verification``):
    that tool; the discoverable-tool handlers themselves, customer-side tools
    (``call_discoverable_user_tool``, ``apply_for_credit_card``, ...) and names that are not
    agent tools: nothing.
    """
    gold: list[str] = []
    for action in actions:
        name = str(action.get("name", ""))
        if name in _AGENT_NAME_ACTIONS:
            target = (action.get("arguments") or {}).get("agent_tool_name")
        elif name in _META_AGENT_TOOLS:
            target = None
        else:
            target = name
        if isinstance(target, str) and target in agent_tools and target not in gold:
            gold.append(target)
    return tuple(gold)


def _source_note(data: Tau2Data) -> str:
    if data.runtime_tasks:
        return f"{data.task_source.name}/{TASK_FILES} (the files tau2 runs)"
    return (f"{data.task_source.name} (no tasks/ folder: tau2 itself runs tasks/{TASK_FILES}, "
            "which differ on 13 of 97 tasks)")


_WARNED: set[str] = set()
_WARNED_LOCK = threading.Lock()


def _warn_once(message: str) -> None:
    """``warnings.warn(message)`` the first time this process gives that text: a run
    builds the suite several times (its checks, each seed, each capped sample, the learned
    strategies' folds), and Python's own once-per-place rule starts again whenever a library
    changes the warning filters (``warnings.catch_warnings``)."""
    with _WARNED_LOCK:
        if message in _WARNED:
            return
        _WARNED.add(message)
    warnings.warn(message, stacklevel=3)


def _topic(doc_id: str) -> str:
    return re.sub(r"_\d+$", "", doc_id.removeprefix("doc_"))


def banking_suite(seed: int = 0, size: int | None = None, split: str = "eval",
                  path: str | os.PathLike[str] | None = None,
                  counter: TokenCounter = DEFAULT_TOKEN_COUNTER):
    """``tau2-banking``: every task of the folder (module docstring), then the ``split``
    part (``split_of`` on the tau2 task id; the registry asks for ``"all"``: the suite is
    cross-fitted), first ``size`` in id order (the suite has no random draw, so ``seed``
    changes nothing; a cross-fitted run's seed draws its folds). Documents and schemas are
    priced by ``counter`` (tokens; default ``junction.tokens.DEFAULT_TOKEN_COUNTER``).
    Returns a ``SuiteBuild``.

    Skip reasons: ``no_instructions``, ``unknown_required_document`` (also one warning
    naming the task and the document), ``nothing_to_find`` (no required document and no
    gold agent tool: a free success for any selection; one warning naming every such task,
    and the note gives their count). ``DatasetError`` as in ``load_data``, and when no
    task could be loaded; ``ValueError`` on an unknown split.
    """
    from junction_datasets.registry import SuiteBuild
    from junction_datasets.split import SPLITS, split_of

    if split not in SPLITS:
        raise ValueError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    data = load_data(path)
    contexts = tuple(
        ContextResource.from_text(doc_id, f"{title}\n\n{content}", SourceKind.POLICY,
                                  {"topic": _topic(doc_id)}, counter=counter)
        for doc_id, (title, content) in sorted(data.documents.items()))
    tools = tuple(ToolResource.from_schema(t.name, t.description, t.json_schema,
                                           metadata={"discoverable": t.discoverable},
                                           counter=counter)
                  for t in data.tools)
    tool_ids = {t.id for t in tools}
    named = {c.id: tuple(t.id for t in tools if names_tool(c.content, t.id)) for c in contexts}
    interactions = tuple(Interaction(source=d, target=t, weight=NAMED_PAIR_WEIGHT)
                         for d, ts in named.items() for t in ts)
    skipped: Counter[str] = Counter()
    built: list[BenchmarkTask] = []
    no_gold_tool = 0
    nothing: list[str] = []
    for raw in data.tasks:
        task_id = str(raw.get("id", ""))
        reason, missing = _skip_reason(raw, data.documents, tool_ids)
        if reason is not None:
            if missing is not None:
                _warn_once(f"{SUITE}: task {task_id} left out: its required document "
                           f"{missing} is not in {data.root}/documents")
            if reason == "nothing_to_find":
                nothing.append(task_id)
            skipped[reason] += 1
            continue
        instructions = raw["user_scenario"]["instructions"]
        required = [str(d) for d in raw.get("required_documents") or []]
        actions = (raw.get("evaluation_criteria") or {}).get("actions") or []
        gold_tools = resolve_gold(actions, tool_ids)
        no_gold_tool += not gold_tools
        pairs = tuple(GoldPair(context_id=d, tool_id=t) for d in dict.fromkeys(required)
                      for t in gold_tools if t in named[d])
        built.append(BenchmarkTask(
            task_id=f"{SUITE}-{task_id}", suite=SUITE, objective=instructions,
            contexts=contexts, tools=tools, budget=Budget(max_tokens=MAX_TOKENS),
            interactions=interactions,
            gold_context_ids=tuple(dict.fromkeys(required)), gold_tool_ids=gold_tools,
            gold_pairs=pairs,
            verifier=VerifierSpec(kind="tools_with_documents",
                                  params={"actions": gold_actions(actions)}),
            metadata={"tau2_id": task_id, "actions": len(actions),
                      "disputed": task_id in DISPUTED_TASKS},
        ))
    if not built:
        raise DatasetError(_no_task_line(data.task_source, skipped))
    if nothing:  # one line for them all, once a process
        _warn_once(f"{SUITE}: {len(nothing)} task(s) left out, nothing to find (no gold "
                   f"agent tool, no required document: any selection would pass): "
                   f"{_listed(nothing)} in {data.task_source}")
    part = [t for t in built if split == "all" or split_of(t.metadata["tau2_id"]) == split]
    part.sort(key=lambda t: t.task_id)
    chosen = part if size is None else part[:size]
    return SuiteBuild(
        tasks=chosen, rows_loaded=len(built), rows_skipped=dict(sorted(skipped.items())),
        rows_held_out=len(built) - len(part),
        note=(f"tau2-bench banking_knowledge at {data.root}: {len(data.tasks)} tasks read from "
              f"{_source_note(data)}, "
              f"{len(built)} loaded, {len(part)} in the {split} split, {len(chosen)} kept; "
              f"{len(contexts)} documents, {len(tools)} agent tools, {len(interactions)} "
              f"document-names-tool pairs (w={NAMED_PAIR_WEIGHT}); {no_gold_tool} loaded "
              f"task(s) have no gold agent tool (kept, graded on their required "
              f"documents); {len(nothing)} task(s) with neither a gold agent tool nor a "
              f"required document left out (nothing to find); budget {MAX_TOKENS} tokens, "
              f"pools the top {CONTEXT_POOL} documents by the run's pool rule + all tools. The "
              "query is the simulated customer's instructions, which hold facts the "
              "customer reveals only when asked. Retrieval success is a proxy; where the agent "
              "acts, it is given the exposed set and the customer's whole situation at once "
              "and answers with the calls it would make, graded by tau2's action check on "
              "the gold agent actions: not tau2's conversation, and tau2 itself grades most "
              "tasks by the database state its calls leave."),
    )
