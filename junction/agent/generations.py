"""Generations: the persistent cache of agent answers, and the executor that reads it first.

``AgentCache`` is one sqlite file (WAL) with a table per executor (``GenerationTable``):
generations keyed by sha256 of (model, prompt sha256, decoding settings); a hit returns
the stored text and token counts byte for byte. ``CachedExecutor`` is what both model
executors (``junction.agent.llm.LLMExecutor``, ``junction.agent.remote.RemoteExecutor``)
do with an exposed set: fit the prompt to the agent's window (``fit_prompt``), look it up,
generate on a miss and store it, decode the answer with the task's grader's decoder
(``junction.agent.graders.decoder_for``; BFCL's ``parse_output`` by default). They differ only in
the agent that generates and in what they name as the model.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from junction.agent.execution import ExecutionResult, ToolCall
from junction.agent.grading import json_safe
from junction.agent.prompt import BFCL_LAYOUT, AgentError, AgentPrompt, fit_prompt, parse_output
from junction.sqlite_cache import open_wal
from junction.tasks import BenchmarkTask, RouterView

if TYPE_CHECKING:
    from junction.agent.graders import Decoder

__all__ = [
    "AGENT_CACHE_NAME",
    "EMBEDDED_GENERATIONS",
    "AgentCache",
    "CachedExecutor",
    "Generation",
    "GenerationAgent",
    "GenerationTable",
]


@dataclass(frozen=True)
class Generation:
    """One model answer: text, prompt and generated token counts, whether it was cached,
    and the milliseconds the model (or the cache lookup) took (``wall_ms``; not stored)."""

    text: str
    prompt_tokens: int
    generated_tokens: int
    cached: bool = False
    wall_ms: float = 0.0


AGENT_CACHE_NAME = "agent_cache.sqlite"
"""The agent cache's file name under ``state_dir()`` (one of ``junction.sqlite_cache.
CACHE_FILES``): the embedded and the remote executors' generations, a table each."""


@dataclass(frozen=True)
class GenerationTable:
    """Where one executor's generations live in the agent cache: the sqlite table, the
    name of its model column (a file sha256, or a server's model id) and the fields put
    before the model in the key (a remote key starts with ``remote``, so it never equals
    an embedded one)."""

    name: str
    model_column: str
    key_prefix: tuple[str, ...] = ()

    def key(self, model: str, prompt_sha256: str, settings: str) -> str:
        """sha256 (hex) of the key prefix, the model, the prompt's sha256 and the
        settings, NUL-separated."""
        return hashlib.sha256("\0".join((*self.key_prefix, model, prompt_sha256, settings))
                              .encode("utf-8")).hexdigest()


EMBEDDED_GENERATIONS = GenerationTable("agent_generations", "model_sha256")
"""The embedded ``llm`` executor's table: keyed by the GGUF file's sha256."""


class AgentCache:
    """sqlite cache (WAL) of generations keyed by ``table.key(model, prompt, settings)``.

    ``table``: the embedded executor's (``EMBEDDED_GENERATIONS``) or the remote one's
    (``junction.agent.remote.REMOTE_GENERATIONS``); both share the one file. Raises
    ``AgentError`` naming the file if it cannot be opened; a corrupt file is moved aside
    (``junction.sqlite_cache.check_cache``).
    """

    def __init__(self, path: Path, table: GenerationTable = EMBEDDED_GENERATIONS,
                 busy_timeout_s: float = 30.0) -> None:
        self.path = Path(path)
        self.table = table
        self._db = open_wal(
            self.path,
            f"CREATE TABLE IF NOT EXISTS {table.name} ("
            f" key TEXT PRIMARY KEY, {table.model_column} TEXT NOT NULL,"
            " prompt_sha256 TEXT NOT NULL, settings TEXT NOT NULL, text TEXT NOT NULL,"
            " prompt_tokens INTEGER NOT NULL, generated_tokens INTEGER NOT NULL)",
            AgentError, "agent cache", busy_timeout_s)
        self._lock = threading.Lock()

    def get(self, key: str) -> Generation | None:
        """The stored generation for ``key`` (``cached=True``), or None."""
        with self._lock:
            row = self._db.execute("SELECT text, prompt_tokens, generated_tokens FROM "
                                   f"{self.table.name} WHERE key = ?", (key,)).fetchone()
        return None if row is None else Generation(row[0], row[1], row[2], cached=True)

    def put(self, key: str, model: str, prompt_sha256: str, settings: str,
            generation: Generation) -> None:
        """Store a generation; an existing key is kept."""
        with self._lock:
            self._db.execute(
                f"INSERT OR IGNORE INTO {self.table.name} VALUES (?, ?, ?, ?, ?, ?, ?)",
                (key, model, prompt_sha256, settings, generation.text,
                 generation.prompt_tokens, generation.generated_tokens))

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute(f"SELECT COUNT(*) FROM {self.table.name}").fetchone()[0]


class GenerationAgent(Protocol):
    """What ``CachedExecutor`` asks of an agent (``LlamaAgent``, ``RemoteAgent``)."""

    @property
    def prompt_limit(self) -> int:
        """The most prompt tokens that leave room for the generation."""
        ...

    def count_prompt_tokens(self, prompt: AgentPrompt) -> int:
        """The prompt's tokens as the model will read them."""
        ...

    def generate(self, prompt: AgentPrompt) -> Generation:
        """The model's answer to ``prompt``."""
        ...


class CachedExecutor:
    """A model executor: ``execute(task, context_ids, tool_ids)`` like the toy one.

    Reads only ``task.router_view()``; fits the prompt to ``agent``'s window
    (``fit_prompt`` with its ``count_prompt_tokens`` and ``prompt_limit``) and looks it up
    in ``cache`` (if any, keyed by ``table.key(model, prompt sha256, settings)``) before
    calling ``agent.generate``. Callers asking the same prompt at once wait for one
    generation (a per-key lock), then read the cache. The result carries the text, the
    decoded calls (tool ids as the model named them), token counts, the prompt's sha256,
    the contexts left out to fit (``dropped_context_ids``), ``cached``, ``wall_ms``
    (timings only) and ``names`` (the model's sha256, or the server it ran on).
    """

    name = "model"

    def __init__(self, agent: GenerationAgent, cache: AgentCache | None, table: GenerationTable,
                 model: str, settings: str, names: dict[str, Any]) -> None:
        self.agent = agent
        self.cache = cache
        self._table, self._model, self._settings, self._names = table, model, settings, names
        self._pending: dict[str, threading.Lock] = {}  # one lock per key being generated
        self._pending_guard = threading.Lock()

    def execute(self, task: BenchmarkTask, context_ids: Iterable[str],
                tool_ids: Iterable[str]) -> ExecutionResult:
        """Run the agent on the exposed set (ids not in the task raise ``KeyError``); the
        answer is decoded by the task's grader's decoder (``decoder_for``)."""
        from junction.agent.graders import decoder_for

        return self.execute_view(task.router_view(), context_ids, tool_ids,
                                 decode=decoder_for(task))

    def execute_view(self, view: RouterView, context_ids: Iterable[str],
                     tool_ids: Iterable[str], decode: Decoder = parse_output,
                     ) -> ExecutionResult:
        """``execute`` on a router view (what the agent may see), the answer read by
        ``decode`` (``junction.agent.graders.Decoder``; BFCL's by default)."""
        from junction.agent.graders import prompt_layout

        cs, ts = tuple(sorted(context_ids)), tuple(sorted(tool_ids))
        prompt, dropped = fit_prompt(view, cs, ts, self.agent.count_prompt_tokens,
                                     self.agent.prompt_limit,
                                     prompt_layout(view.suite) or BFCL_LAYOUT)
        generation = self._generation(prompt)
        kind, calls, decode_error = decode(generation.text, ts)
        tool_calls = tuple(
            ToolCall(index=i, tool_id=name, arguments=json_safe(args))
            for i, call in enumerate(calls) for name, args in call.items())
        return ExecutionResult(
            context_ids=cs, tool_ids=ts, tool_calls=tool_calls, text=generation.text,
            output_kind=kind, decode_error=decode_error,
            prompt_tokens=generation.prompt_tokens,
            generated_tokens=generation.generated_tokens, prompt_sha256=prompt.sha256,
            cached=generation.cached, wall_ms=generation.wall_ms,
            dropped_context_ids=dropped, **self._names)

    def _generation(self, prompt: AgentPrompt) -> Generation:
        """The cached generation of ``prompt``, or the agent's (then stored). A hit's
        ``wall_ms`` is its lookup's, not its wait for another caller's generation of the same
        prompt: waiting is not its time (as in ``LlamaAgent.generate``)."""
        key = self._table.key(self._model, prompt.sha256, self._settings)
        with self._pending_guard:
            pending = self._pending.setdefault(key, threading.Lock())
        with pending:  # two units asking the same prompt at once: one generation, one hit
            t0 = time.perf_counter()
            generation = self.cache.get(key) if self.cache is not None else None
            if generation is not None:
                return Generation(generation.text, generation.prompt_tokens,
                                  generation.generated_tokens, cached=True,
                                  wall_ms=(time.perf_counter() - t0) * 1000)
            generation = self.agent.generate(prompt)
            if self.cache is not None:
                self.cache.put(key, self._model, prompt.sha256, self._settings, generation)
            return generation
