"""The ``remote`` executor: the agent's prompt on any OpenAI-compatible server.

The server gets the very chat messages the embedded agent renders (``junction.agent.
render_prompt``: BFCL's system prompt with the exposed tools, then the documents block;
the objective as the user message) through the ``openai`` client's chat completions.
Chat, not plain completions: a server holding the same GGUF applies the chat template
stored in the model file exactly as the embedded ``llama_cpp.Llama.create_chat_completion``
does, so the rendered text, and under greedy decoding the answer, are the same
(``tests/test_remote_agent.py`` checks it against llama-cpp-python's own server).

Decoding: temperature 0, top_p 1, the embedded agent's token cap and seed, and
``EXTRA_BODY`` (``top_k`` 1, ``min_p`` 0, ``repeat_penalty`` 1): llama-cpp-python's server
defaults to ``repeat_penalty`` 1.1, and llama.cpp applies the penalty before its greedy
sampler, so without it the server's greedy answer differs from the embedded one. llama.cpp
and vLLM servers take these fields; a server that refuses unknown fields can be given
``RemoteAgentConfig(extra_body={})``.

Timeouts and retries are the client's own (``openai.OpenAI(timeout=, max_retries=)``: it
retries connection errors, 408, 409, 429 and 5xx with exponential backoff and jitter).
The API key is read from ``API_KEY_ENV`` only and is never part of a key, a trace, a log
line or an error message; a URL carrying credentials is refused.

Generations are cached (sqlite, WAL, table ``remote_generations`` beside the embedded
agent's in the same file) by sha256 of (server model id, prompt sha256, decoding
settings): the key names what the server said it serves, never a file sha256 it cannot
know. The server's address is not in the key: the same model id and settings on another
host are taken to give the same text.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from junction.agent.llm import (AgentCache, AgentConfig, AgentError, AgentPrompt, Generation,
                                GenerationTable, parse_output, render_prompt)
from junction.agent.execution import ExecutionResult, ToolCall
from junction.agent.grading import json_safe
from junction.tasks import BenchmarkTask, RouterView

__all__ = ["API_KEY_ENV", "EXTRA_BODY", "REMOTE_GENERATIONS", "RemoteAgentConfig", "RemoteAgent",
           "RemoteGenerationCache", "RemoteExecutor", "check_agent_url"]

API_KEY_ENV = "JUNCTION_AGENT_API_KEY"
"""The environment variable holding the server's API key (default ``none``: local servers
take any key)."""

EXTRA_BODY: dict[str, Any] = {"top_k": 1, "min_p": 0.0, "repeat_penalty": 1.0}
"""Non-OpenAI sampling fields sent with every request, so a llama.cpp server decodes as
the embedded agent does (``junction.agent.LlamaAgent.generate``; reason in the module
docstring)."""


@dataclass(frozen=True)
class RemoteAgentConfig:
    """Decoding and transport settings of the ``remote`` executor.

    ``max_tokens`` and ``seed``: the embedded agent's (``AgentConfig``); ``temperature`` 0
    and ``top_p`` 1: greedy; ``extra_body``: ``EXTRA_BODY`` by default. ``timeout_s``:
    seconds one request may take (a CPU server spends 15-40 s on a generation);
    ``max_retries``: the client's retries (openai's default, 2). ``concurrency``: requests
    in flight at once, across every unit of the process. The cache key holds the decoding
    fields only (``key``).
    """

    max_tokens: int = AgentConfig.max_tokens
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = AgentConfig.seed
    extra_body: dict[str, Any] = field(default_factory=lambda: dict(EXTRA_BODY))
    timeout_s: float = 600.0
    max_retries: int = 2
    concurrency: int = 1

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {self.concurrency}")
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {self.max_tokens}")

    def key(self) -> str:
        """The settings that change an output, as canonical JSON (transport excluded)."""
        fields = {k: v for k, v in asdict(self).items()
                  if k not in ("timeout_s", "max_retries", "concurrency")}
        return json.dumps(fields, sort_keys=True)


def check_agent_url(url: str) -> str:
    """``url`` if it is an http(s) base URL without credentials, else ``AgentError``.

    The URL is recorded in the run's parameters and traces, so a user name, password or
    query string (where keys hide) is refused: the key belongs in ``API_KEY_ENV``.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise AgentError(f"--agent-url must be an http(s) URL such as "
                         f"http://127.0.0.1:8080/v1, got {url!r}")
    if parts.username or parts.password or parts.query or parts.fragment:
        raise AgentError(f"--agent-url must carry no credentials or query; put the API key "
                         f"in ${API_KEY_ENV}")
    return url


REMOTE_GENERATIONS = GenerationTable("remote_generations", "model_id", ("remote",))
"""The remote executor's table in the agent cache: keyed by the server's model id."""


class RemoteGenerationCache(AgentCache):
    """The agent cache's ``REMOTE_GENERATIONS`` table (``AgentCache``) at ``path``."""

    def __init__(self, path: Path, busy_timeout_s: float = 30.0) -> None:
        super().__init__(path, REMOTE_GENERATIONS, busy_timeout_s)


class RemoteAgent:
    """A model behind an OpenAI-compatible ``url`` (``.../v1``), answering greedily.

    ``check_model`` asks the server which models it serves; ``generate`` sends one chat
    completion. Every failure is an ``AgentError`` of one line naming the URL (the key is
    never in it). ``endpoint`` is what traces record: ``host[:port]/path model-id``.
    """

    def __init__(self, url: str, model: str,
                 config: RemoteAgentConfig = RemoteAgentConfig()) -> None:
        import openai

        self.url = check_agent_url(url)
        self.model = model
        self.config = config
        parts = urlsplit(url)
        self.endpoint = f"{parts.netloc}{parts.path.rstrip('/')} {model}"
        self._openai = openai
        self._client = openai.OpenAI(base_url=url, api_key=os.environ.get(API_KEY_ENV) or "none",
                                     timeout=config.timeout_s, max_retries=config.max_retries)
        self._slots = threading.BoundedSemaphore(config.concurrency)

    def _error(self, what: str, exc: Exception) -> AgentError:
        openai = self._openai
        if isinstance(exc, openai.APITimeoutError):
            reason = f"no answer within {self.config.timeout_s:g} s"
        elif isinstance(exc, openai.APIConnectionError):
            reason = "cannot connect (is the server running?)"
        elif isinstance(exc, openai.APIStatusError):
            reason = f"HTTP {exc.status_code}"
        else:
            reason = type(exc).__name__
        return AgentError(f"agent server {self.url}: {what} failed: {reason} (the client "
                          f"retries connection errors, 429 and 5xx {self.config.max_retries} "
                          f"times)")

    def models(self) -> list[str]:
        """The model ids the server lists (``GET /models``), sorted."""
        try:
            return sorted(m.id for m in self._client.models.list())
        except self._openai.OpenAIError as exc:
            raise self._error("listing models", exc) from None

    def check_model(self) -> None:
        """Raise ``AgentError`` listing the server's models unless it serves ``model``.

        (llama-cpp-python's server answers any model name with its own model, so the name
        is checked here, before the first generation.)
        """
        served = self.models()
        if self.model not in served:
            raise AgentError(f"agent server {self.url} does not serve model {self.model!r}; "
                             f"it serves: {', '.join(served) or '(none)'}")

    def generate(self, prompt: AgentPrompt) -> Generation:
        """The server's answer to ``prompt`` (greedy, capped at ``config.max_tokens``);
        ``wall_ms`` counts from when a request slot is free."""
        cfg = self.config
        with self._slots:
            t0 = time.perf_counter()
            try:
                out = self._client.chat.completions.create(
                    model=self.model, messages=[dict(m) for m in prompt.messages],
                    temperature=cfg.temperature, top_p=cfg.top_p, seed=cfg.seed,
                    max_tokens=cfg.max_tokens, extra_body=cfg.extra_body or None)
            except self._openai.OpenAIError as exc:
                raise self._error("a chat completion", exc) from None
            wall_ms = (time.perf_counter() - t0) * 1000
        usage = out.usage
        return Generation(out.choices[0].message.content or "",
                          int(usage.prompt_tokens) if usage else 0,
                          int(usage.completion_tokens) if usage else 0, wall_ms=wall_ms)


class RemoteExecutor:
    """The ``remote`` executor: ``execute(task, context_ids, tool_ids)`` like ``llm``.

    Reads only ``task.router_view()``; looks the prompt up in ``cache`` (if any) first.
    The result carries the text, decoded calls, token counts (as the server reports
    them), the prompt's sha256, ``remote`` (``RemoteAgent.endpoint``) and no model sha256.
    ``concurrency``: how many tasks of a batch may be sent at once. Callers asking the
    same prompt at once wait for one request (a per-key lock), then read the cache.
    """

    name = "remote"

    def __init__(self, agent: RemoteAgent, cache: RemoteGenerationCache | None = None) -> None:
        self.agent = agent
        self.cache = cache
        self.concurrency = agent.config.concurrency
        self._pending: dict[str, threading.Lock] = {}  # one lock per key being generated
        self._pending_guard = threading.Lock()

    def execute(self, task: BenchmarkTask, context_ids: Iterable[str],
                tool_ids: Iterable[str]) -> ExecutionResult:
        """Run the agent on the exposed set (ids not in the task raise ``KeyError``)."""
        return self.execute_view(task.router_view(), context_ids, tool_ids)

    def execute_view(self, view: RouterView, context_ids: Iterable[str],
                     tool_ids: Iterable[str]) -> ExecutionResult:
        """``execute`` on a router view (what the agent may see)."""
        cs, ts = tuple(sorted(context_ids)), tuple(sorted(tool_ids))
        prompt = render_prompt(view, cs, ts)
        settings = self.agent.config.key()
        t0 = time.perf_counter()
        key = REMOTE_GENERATIONS.key(self.agent.model, prompt.sha256, settings)
        with self._pending_guard:
            pending = self._pending.setdefault(key, threading.Lock())
        with pending:  # two units asking the same prompt at once: one request, one hit
            generation = self.cache.get(key) if self.cache is not None else None
            if generation is not None:
                generation = Generation(generation.text, generation.prompt_tokens,
                                        generation.generated_tokens, cached=True,
                                        wall_ms=(time.perf_counter() - t0) * 1000)
            else:
                generation = self.agent.generate(prompt)
                if self.cache is not None:
                    self.cache.put(key, self.agent.model, prompt.sha256, settings,
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
            model_sha256=None, prompt_sha256=prompt.sha256, remote=self.agent.endpoint,
            cached=generation.cached, wall_ms=generation.wall_ms)
