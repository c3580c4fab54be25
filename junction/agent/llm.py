"""The ``llm`` executor: a local instruct model acts on an exposed set.

Layout (BFCL's prompting layout for models without a function-calling template, see
``junction.agent.bfcl_checker.system_prompt``): the system message is BFCL's default system
prompt listing the exposed tools as JSON (``{"name", "description", "parameters"}`` from
each ``ToolResource``; ids sorted), followed, when contexts are exposed, by a documents
block (``DOCUMENTS_HEADER`` then ``[document <id>]`` and the content, ids sorted); the user
message is the task's objective. The agent answers ``[func(arg=value)]`` or plain text.

The executor reads only ``task.router_view()`` and the exposed ids: never gold, never the
verifier, never metadata (``render_prompt`` takes a ``RouterView``).

A prompt that does not fit the model's context window with room for the generation (a
reference's whole prior conversation can take 20,000 tokens) keeps the most recent exposed
contexts that fit, oldest left out first in the view's order, and says so in the prompt
(``LEFT_OUT_NOTE``); the result names the contexts left out (``fit_prompt``), and the trace
records them (``agent_dropped_context_ids``). Prompts that fit are rendered unchanged.

Decoding is greedy (temperature 0, top-k 1, fixed seed and thread count) with a cap on
generated tokens (``AgentConfig``). Results are cached persistently by (model sha256,
prompt sha256, decoding settings) in ``AgentCache``; a hit returns the stored text and
token counts byte for byte. The previous call's KV cache is reused in whole
``n_batch`` (512-token) blocks of shared prompt prefix only (``LlamaAgent.generate``), so
the text never depends on what was asked before: questions over one long shared system
prompt (a scenario's whole conversation) pay for little more than the question.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from junction.agent.bfcl_checker import DecodeError, decode_calls, system_prompt
from junction.errors import JunctionError
from junction.agent.execution import ExecutionResult, ToolCall
from junction.agent.grading import json_safe
from junction.sqlite_cache import open_wal
from junction.tasks import BenchmarkTask, RouterView

__all__ = [
    "AgentConfig",
    "AgentError",
    "AgentPrompt",
    "AgentCache",
    "AGENT_CACHE_NAME",
    "EMBEDDED_GENERATIONS",
    "GenerationTable",
    "Generation",
    "LlamaAgent",
    "LLMExecutor",
    "DOCUMENTS_HEADER",
    "LEFT_OUT_NOTE",
    "QUESTION_RESERVE",
    "fit_prompt",
    "render_prompt",
    "parse_output",
]

DOCUMENTS_HEADER = ("Here are documents that may help. If they answer the question, reply "
                    "with the answer in plain text instead of a function call.")
"""Introduces the exposed contexts after BFCL's system prompt (Junction's addition)."""

LEFT_OUT_NOTE = "[{n} earlier documents left out: they do not fit the context window]"
"""Follows ``DOCUMENTS_HEADER`` when ``fit_prompt`` left ``n`` contexts out."""

QUESTION_RESERVE = 128
"""Prompt tokens ``fit_prompt`` keeps for the user message when it fits the system message,
so that questions shorter than this (every BFCL memory question) over the same exposed set
get the same system message, hence a shared prompt prefix llama.cpp reuses."""


class AgentError(JunctionError):
    """The agent model cannot be loaded or its cache cannot be opened."""


@dataclass(frozen=True)
class AgentConfig:
    """Decoding settings of the ``llm`` executor (all part of the cache key).

    ``max_tokens``: cap on generated tokens (192 holds four BFCL calls); ``n_ctx``: context
    window in tokens (the whole 16-tool pool is about 3,500 prompt tokens); ``n_threads``:
    llama.cpp threads (1 by default, as for the judge: on the shared 2-core machine one
    thread scored 4x faster than two, ``bench/README.md``; use 2 on a quiet machine);
    temperature 0 and top-k 1 are greedy decoding.
    """

    max_tokens: int = 192
    n_ctx: int = 8192
    n_threads: int = 1
    temperature: float = 0.0
    top_k: int = 1
    seed: int = 0

    def key(self) -> str:
        """The settings that change an output, as canonical JSON (``n_threads`` excluded:
        greedy decoding does not depend on it)."""
        fields = {k: v for k, v in asdict(self).items() if k != "n_threads"}
        return json.dumps(fields, sort_keys=True)


@dataclass(frozen=True)
class AgentPrompt:
    """Chat messages for one (view, exposed set) and their sha256 (canonical JSON)."""

    messages: tuple[dict[str, str], ...]
    sha256: str


def _tool_doc(view: RouterView, tool_id: str) -> dict[str, Any]:
    tool = view.tool(tool_id)
    return {"name": tool.id, "description": tool.description, "parameters": tool.json_schema}


def render_prompt(view: RouterView, context_ids: Iterable[str],
                  tool_ids: Iterable[str], left_out: int = 0,
                  question: str | None = None) -> AgentPrompt:
    """The agent's prompt for the exposed set (layout in the module docstring).

    ``left_out`` > 0 adds ``LEFT_OUT_NOTE`` after the documents header (``fit_prompt``);
    ``question`` replaces the objective as the user message (``fit_prompt`` measures the
    system message with an empty one). Raises ``KeyError`` naming an id that is not a
    resource of the view.
    """
    if not isinstance(view, RouterView):
        raise TypeError(f"render_prompt takes a RouterView, got {type(view).__name__}")
    tools = [_tool_doc(view, t) for t in sorted(tool_ids)]
    system = system_prompt(tools)
    contexts = [view.context(c) for c in sorted(context_ids)]
    if contexts or left_out:
        header = DOCUMENTS_HEADER + ("\n" + LEFT_OUT_NOTE.format(n=left_out) if left_out else "")
        blocks = [f"[document {c.id}]\n{c.content}" for c in contexts]
        system = system.rstrip("\n") + "\n\n" + header + "\n" + "\n\n".join(blocks) + "\n"
    messages = ({"role": "system", "content": system},
                {"role": "user", "content": view.objective if question is None else question})
    canonical = json.dumps(messages, sort_keys=True, ensure_ascii=False)
    return AgentPrompt(messages, hashlib.sha256(canonical.encode("utf-8")).hexdigest())


def fit_prompt(view: RouterView, context_ids: Iterable[str], tool_ids: Iterable[str],
               count: Callable[[AgentPrompt], int],
               limit: int) -> tuple[AgentPrompt, tuple[str, ...]]:
    """``render_prompt`` of the exposed set, fitted to ``limit`` prompt tokens.

    ``count`` gives a prompt's tokens as the model will read them (``LlamaAgent.
    count_prompt_tokens``). When the whole prompt fits it is returned unchanged with no id
    left out. Otherwise the exposed contexts are kept from the most recent (last in the
    view's context order) back, as many as fit with ``QUESTION_RESERVE`` tokens kept for
    the question (a binary search: tokens grow with each context kept), then more are left
    out while the actual question does not fit. Returns (prompt, ids left out, view
    order). Raises ``AgentError`` when the prompt does not fit even with every context left
    out (the tool schemas alone exceed the window).
    """
    cs, ts = tuple(sorted(context_ids)), tuple(sorted(tool_ids))
    whole = render_prompt(view, cs, ts)
    if count(whole) <= limit:
        return whole, ()
    exposed = set(cs)
    ordered = [c.id for c in view.contexts if c.id in exposed]

    def prompt(kept: int, question: str | None = None) -> AgentPrompt:
        return render_prompt(view, ordered[len(ordered) - kept:] if kept else (), ts,
                             left_out=len(ordered) - kept, question=question)

    low, high = 0, len(ordered) - 1  # the most kept with the question reserve fitting
    if count(prompt(0, "")) + QUESTION_RESERVE > limit:
        high = -1
    while low < high:
        mid = (low + high + 1) // 2
        if count(prompt(mid, "")) + QUESTION_RESERVE <= limit:
            low = mid
        else:
            high = mid - 1
    kept = max(high, 0)
    while kept > 0 and count(prompt(kept)) > limit:
        kept -= 1
    fitted = prompt(kept)
    if count(fitted) > limit:
        raise AgentError(f"the agent's prompt takes {count(fitted)} tokens with every "
                         f"context left out, over its {limit}-token limit: fewer tools "
                         "or a larger n_ctx")
    return fitted, tuple(ordered[:len(ordered) - kept])


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

    ``table``: ``EMBEDDED_GENERATIONS`` or the remote executor's
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


class LlamaAgent:
    """A GGUF instruct model on llama-cpp-python, answering chat prompts greedily.

    ``model_sha256`` is the file's sha256 (``junction.models.file_sha256``), passed in by
    the caller that resolved the path. Raises ``AgentError`` if llama.cpp cannot load it.
    """

    def __init__(self, model_path: Path, model_sha256: str,
                 config: AgentConfig = AgentConfig()) -> None:
        try:
            from llama_cpp import Llama
        except ImportError as exc:
            raise AgentError("llama-cpp-python is not installed; run `make setup`") from exc
        self.model_path = Path(model_path)
        self.model_sha256 = model_sha256
        self.config = config
        try:
            self._llm = Llama(model_path=str(model_path), n_ctx=config.n_ctx,
                              n_threads=config.n_threads, n_threads_batch=config.n_threads,
                              seed=config.seed, verbose=False)
        except (ValueError, RuntimeError) as exc:
            raise AgentError(f"llama.cpp cannot load {model_path}: {exc}") from exc
        self._lock = threading.Lock()
        self._formatter = None
        template = self._llm.metadata.get("tokenizer.chat_template")
        if self._llm.chat_format == "chat_template.default" and template:
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            def text(token: int) -> str:
                return "" if token == -1 else self._llm.detokenize(
                    [token], special=True).decode("utf-8", "replace")

            self._formatter = Jinja2ChatFormatter(template=template,
                                                  eos_token=text(self._llm.token_eos()),
                                                  bos_token=text(self._llm.token_bos()))

    @property
    def prompt_limit(self) -> int:
        """The most prompt tokens that leave room for ``max_tokens`` generated ones:
        llama-cpp-python refuses a prompt of ``n_ctx`` tokens or more and shortens the
        generation when prompt + cap reaches ``n_ctx``."""
        return self.config.n_ctx - self.config.max_tokens - 1

    def prompt_token_ids(self, prompt: AgentPrompt) -> list[int] | None:
        """The prompt's token ids as ``generate`` feeds them: the model's own chat template
        (llama-cpp-python's ``Jinja2ChatFormatter``, as ``create_chat_completion`` renders
        it for a GGUF with a template), tokenized with special tokens; None for a model
        without a template (llama-cpp-python then picks another chat format)."""
        if self._formatter is None:
            return None
        result = self._formatter(messages=[dict(m) for m in prompt.messages])
        return self._llm.tokenize(result.prompt.encode("utf-8"),
                                  add_bos=not result.added_special, special=True)

    def count_prompt_tokens(self, prompt: AgentPrompt) -> int:
        """``len(prompt_token_ids(prompt))``; a model without a template is counted as its
        messages' text plus 64 tokens for the chat format's markers."""
        ids = self.prompt_token_ids(prompt)
        if ids is not None:
            return len(ids)
        text = "\n".join(m["content"] for m in prompt.messages)
        return len(self._llm.tokenize(text.encode("utf-8"), add_bos=True, special=False)) + 64

    def _keep_aligned_prefix(self, ids: list[int] | None) -> None:
        """Keep of the previous call's KV cache only the whole ``n_batch`` blocks it shares
        with ``ids`` (none without token ids), so llama-cpp-python's own prefix reuse
        evaluates the rest in the same batches as a cold evaluation would: the same
        floating-point sums, hence the same greedy text whatever was asked before. Reuse
        at any other boundary changed the text (bench/README.md, the agent's cost)."""
        llm = self._llm
        keep = 0
        if ids is not None and llm.n_tokens > 0:
            common = type(llm).longest_token_prefix(llm.input_ids[:llm.n_tokens].tolist(),
                                                    ids)
            keep = common // llm.n_batch * llm.n_batch
            if keep >= len(ids):  # the whole prompt cached: re-evaluate its last block
                keep -= llm.n_batch
        if keep <= 0:
            llm.reset()
        else:
            llm.n_tokens = keep

    def forget_prefix(self) -> None:
        """Drop the evaluated prompt from the model's KV cache, so the next ``generate``
        evaluates its whole prompt (llama-cpp-python otherwise reuses the longest prefix
        shared with the previous call); for measurements."""
        with self._lock:
            self._llm.reset()

    def generate(self, prompt: AgentPrompt) -> Generation:
        """The model's answer to ``prompt`` (greedy, capped at ``config.max_tokens``)."""
        cfg = self.config
        with self._lock:  # the clock starts once the model is ours: waiting is not its time
            t0 = time.perf_counter()
            self._keep_aligned_prefix(self.prompt_token_ids(prompt))
            out = self._llm.create_chat_completion(
                messages=[dict(m) for m in prompt.messages], temperature=cfg.temperature,
                top_k=cfg.top_k, top_p=1.0, min_p=0.0, repeat_penalty=1.0, seed=cfg.seed,
                max_tokens=cfg.max_tokens)
            wall_ms = (time.perf_counter() - t0) * 1000
        usage = out["usage"]
        return Generation(out["choices"][0]["message"]["content"] or "",
                          int(usage["prompt_tokens"]), int(usage["completion_tokens"]),
                          wall_ms=wall_ms)


def parse_output(text: str, exposed_tool_ids: Sequence[str]) -> tuple[str, list[dict], str]:
    """Classify an agent's text: ``(kind, calls, decode_error)``.

    ``kind``: ``calls`` (BFCL's decoder gave at least one call), ``empty`` (it gave
    ``[]``), ``text`` (no call syntax: no ``name(`` of an exposed tool, not a bracketed
    list; a plain-language answer or refusal), ``unparseable`` (call syntax BFCL's decoder
    cannot parse). ``decode_error`` is BFCL's error for ``text``/``unparseable``.
    """
    try:
        calls = decode_calls(text)
    except DecodeError as exc:
        stripped = text.strip("`\n ").removeprefix("python").strip()
        looks_like_call = stripped.startswith("[") or any(
            f"{t}(" in text for t in exposed_tool_ids)
        return ("unparseable" if looks_like_call else "text"), [], str(exc)
    return ("calls" if calls else "empty"), calls, ""


class LLMExecutor:
    """The ``llm`` executor: ``execute(task, context_ids, tool_ids)`` like the toy one.

    Reads only ``task.router_view()``; fits the prompt to the model's window
    (``fit_prompt``) and looks it up in ``cache`` (if any) before calling the model. The
    result carries the text, the decoded calls (tool ids as the model named them), token
    counts, both hashes, the contexts left out to fit (``dropped_context_ids``), ``cached``
    and ``wall_ms`` (timings only).
    """

    name = "llm"

    def __init__(self, agent: LlamaAgent, cache: AgentCache | None = None) -> None:
        self.agent = agent
        self.cache = cache

    def execute(self, task: BenchmarkTask, context_ids: Iterable[str],
                tool_ids: Iterable[str]) -> ExecutionResult:
        """Run the agent on the exposed set (ids not in the task raise ``KeyError``)."""
        return self.execute_view(task.router_view(), context_ids, tool_ids)

    def execute_view(self, view: RouterView, context_ids: Iterable[str],
                     tool_ids: Iterable[str]) -> ExecutionResult:
        """``execute`` on a router view (what the agent may see)."""
        cs, ts = tuple(sorted(context_ids)), tuple(sorted(tool_ids))
        prompt, dropped = fit_prompt(view, cs, ts, self.agent.count_prompt_tokens,
                                     self.agent.prompt_limit)
        settings = self.agent.config.key()
        t0 = time.perf_counter()
        key = EMBEDDED_GENERATIONS.key(self.agent.model_sha256, prompt.sha256, settings)
        generation = self.cache.get(key) if self.cache is not None else None
        if generation is not None:
            generation = Generation(generation.text, generation.prompt_tokens,
                                    generation.generated_tokens, cached=True,
                                    wall_ms=(time.perf_counter() - t0) * 1000)
        else:
            generation = self.agent.generate(prompt)
            if self.cache is not None:
                self.cache.put(key, self.agent.model_sha256, prompt.sha256, settings,
                               generation)
        kind, calls, decode_error = parse_output(generation.text, ts)
        tool_calls = tuple(
            ToolCall(index=i, tool_id=name, arguments=json_safe(args))
            for i, call in enumerate(calls) for name, args in call.items())
        return ExecutionResult(
            context_ids=cs, tool_ids=ts, tool_calls=tool_calls, text=generation.text,
            output_kind=kind, decode_error=decode_error,
            prompt_tokens=generation.prompt_tokens,
            generated_tokens=generation.generated_tokens,
            model_sha256=self.agent.model_sha256, prompt_sha256=prompt.sha256,
            cached=generation.cached, wall_ms=generation.wall_ms,
            dropped_context_ids=dropped)
