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

The prompt is fitted to the server's context window as the embedded agent's is
(``junction.agent.prompt.fit_prompt``: the most recent exposed contexts that fit, with room
for ``max_tokens``). The window is ``RemoteAgentConfig.context_tokens`` (``--agent-context-
tokens``) or what the server reports (``RemoteAgent.context_window``); tokens are counted
by the server's own tokenizer (``RemoteAgent.count_prompt_tokens``). The tests run
llama-cpp-python's server; vLLM's and llama.cpp's fields and endpoints are read as their
documentation gives them.

Generations are cached (sqlite, WAL, table ``remote_generations`` beside the embedded
agent's in the same file) by sha256 of (server model id, prompt sha256, decoding
settings): the key names what the server said it serves, never a file sha256 it cannot
know. The server's address is not in the key: the same model id and settings on another
host are taken to give the same text.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

from junction.agent.generations import AgentCache, CachedExecutor, Generation, GenerationTable
from junction.agent.llm import AgentConfig
from junction.agent.prompt import AgentError, AgentPrompt, prompt_limit
from junction.tokens import DEFAULT_TOKEN_COUNTER

if TYPE_CHECKING:
    import openai
    from openai.types.chat import ChatCompletionMessageParam

__all__ = [
    "API_KEY_ENV",
    "APPROX_MARGIN",
    "EXTRA_BODY",
    "REMOTE_GENERATIONS",
    "TOKENIZE_ENDPOINTS",
    "RemoteAgent",
    "RemoteAgentConfig",
    "RemoteExecutor",
    "RemoteGenerationCache",
    "check_agent_url",
]

API_KEY_ENV = "JUNCTION_AGENT_API_KEY"
"""The environment variable holding the server's API key (default ``none``: local servers
take any key)."""

EXTRA_BODY: dict[str, Any] = {"top_k": 1, "min_p": 0.0, "repeat_penalty": 1.0}
"""Non-OpenAI sampling fields sent with every request, so a llama.cpp server decodes as
the embedded agent does (``junction.agent.llm.LlamaAgent.generate``; reason in the module
docstring)."""

TOKENIZE_ENDPOINTS: tuple[tuple[str, str], ...] = (
    ("/extras/tokenize", "input"),  # llama-cpp-python's server (llama_cpp/server/app.py)
    ("/tokenize", "content"),  # llama.cpp's llama-server
    ("/tokenize", "prompt"),  # vLLM
)
"""(path under the server's root, the text field) of the tokenize endpoints tried in order;
each answers ``{"tokens": [...]}``. The first one that answers is used for every count."""

APPROX_MARGIN = 1.25
"""Where a server tokenizes nothing, a text's tokens are ``junction.tokens.
DEFAULT_TOKEN_COUNTER``'s count times this: that counter is within 25% of Qwen2.5's
tokenizer on every script (``tests/test_text.py``); another model's tokenizer may differ
more, so give such a server ``--agent-context-tokens`` with room to spare."""

_PROBE = ({"role": "system", "content": "probe"}, {"role": "user", "content": "probe"})
"""The two-message chat whose server-reported prompt tokens, less its contents' tokens, are
the chat template's own tokens (``RemoteAgent.count_prompt_tokens``)."""


@dataclass(frozen=True)
class RemoteAgentConfig:
    """Decoding and transport settings of the ``remote`` executor.

    ``max_tokens`` and ``seed``: the embedded agent's (``AgentConfig``); ``temperature`` 0
    and ``top_p`` 1: greedy; ``extra_body``: ``EXTRA_BODY`` by default. ``timeout_s``:
    seconds one request may take (a CPU server spends 15-40 s on a generation);
    ``max_retries``: the client's retries (openai's default, 2). ``concurrency``: requests
    in flight at once, across every unit of the process. ``context_tokens``: the server's
    context window in tokens (None: asked of the server, ``RemoteAgent.context_window``).
    ``check_timeout_s`` and ``check_retries``: the same for the checks made before a run
    (``check_model``, ``check_window``: a model list, a probe of one token), short so that
    a server that accepts the connection and never answers is one line in seconds, not
    ``timeout_s`` times the retries. The cache key holds the decoding fields only
    (``key``): the window changes which prompt is sent, and the prompt is in the key.
    """

    max_tokens: int = AgentConfig.max_tokens
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = AgentConfig.seed
    extra_body: dict[str, Any] = field(default_factory=lambda: dict(EXTRA_BODY))
    timeout_s: float = 600.0
    max_retries: int = 2
    concurrency: int = 1
    context_tokens: int | None = None
    check_timeout_s: float = 10.0
    check_retries: int = 1

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {self.concurrency}")
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {self.max_tokens}")
        if not (self.timeout_s > 0 and self.check_timeout_s > 0):
            raise ValueError(f"timeouts must be > 0 seconds, got {self.timeout_s:g} and "
                             f"{self.check_timeout_s:g}")
        if self.context_tokens is not None and self.context_tokens <= self.max_tokens + 1:
            raise ValueError(f"context_tokens must be > max_tokens + 1 ({self.max_tokens + 1}), "
                             f"got {self.context_tokens}")

    def key(self) -> str:
        """The settings that change an output, as canonical JSON (transport excluded)."""
        fields = {k: v for k, v in asdict(self).items()
                  if k not in ("timeout_s", "max_retries", "concurrency", "context_tokens",
                               "check_timeout_s", "check_retries")}
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


def _said(exc: openai.APIStatusError) -> str:
    """What the server said with an error status (its JSON ``error.message``, ``message`` or
    ``detail``, else the body's text), on one line, at most 300 characters."""
    body = getattr(exc, "body", None)
    said: Any = None
    if isinstance(body, dict):
        inner = body.get("error", body)
        said = (inner.get("message") or inner.get("detail")) if isinstance(inner, dict) \
            else inner
        said = said or body.get("detail") or body.get("message")
    elif body is not None:
        said = body
    if said is None:
        response = getattr(exc, "response", None)
        said = getattr(response, "text", None)
    text = " ".join(str(said or "").split())
    return text if len(text) <= 300 else text[:297] + "..."


class RemoteGenerationCache(AgentCache):
    """The agent cache's ``REMOTE_GENERATIONS`` table (``AgentCache``) at ``path``."""

    def __init__(self, path: Path, busy_timeout_s: float = 30.0) -> None:
        super().__init__(path, REMOTE_GENERATIONS, busy_timeout_s)


class RemoteAgent:
    """A model behind an OpenAI-compatible ``url`` (``.../v1``), answering greedily.

    ``check_model`` asks the server which models it serves; ``check_window`` learns its
    context window and how it counts tokens (``context_window``, ``count_prompt_tokens``,
    ``prompt_limit``); ``generate`` sends one chat completion. Every failure is an
    ``AgentError`` of one line naming the URL (the key is never in it). ``endpoint`` is
    what traces record: ``host[:port]/path model-id``.
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
        self._working = openai.OpenAI(base_url=url,
                                      api_key=os.environ.get(API_KEY_ENV) or "none",
                                      timeout=config.timeout_s, max_retries=config.max_retries)
        self._checking = self._working.with_options(timeout=config.check_timeout_s,
                                                    max_retries=config.check_retries)
        self._client = self._working  # the checks swap in ``_checking`` (``_check_limits``)
        self._limits = (config.timeout_s, config.max_retries)
        self._slots = threading.BoundedSemaphore(config.concurrency)
        path = parts.path.rstrip("/")
        self._root = f"{parts.scheme}://{parts.netloc}{path.removesuffix('/v1')}"
        self._fit_lock = threading.Lock()
        self._window: int | None = None
        self._tokenizer: tuple[str, str] | None = None  # (path, text field); None: approximate
        self._template_tokens: int | None = None

    @contextlib.contextmanager
    def _check_limits(self) -> Iterator[None]:
        """Within the block, requests use the checks' timeout and retries (``config.
        check_timeout_s``, ``check_retries``). Used before any work, by one thread."""
        self._client, self._limits = self._checking, (self.config.check_timeout_s,
                                                      self.config.check_retries)
        try:
            yield
        finally:
            self._client, self._limits = self._working, (self.config.timeout_s,
                                                         self.config.max_retries)

    def _error(self, what: str, exc: Exception) -> AgentError:
        openai = self._openai
        timeout_s, retries = self._limits
        checking = self._client is self._checking
        hint = ""
        if isinstance(exc, openai.APITimeoutError):
            reason = f"no answer within {timeout_s:g} s"
            if checking:
                hint = "; a server slower to answer needs --agent-check-timeout S"
        elif isinstance(exc, openai.APIConnectionError):
            reason = "cannot connect (is the server running?)"
        elif isinstance(exc, openai.APIStatusError):
            reason = f"HTTP {exc.status_code}" + (f": {said}" if (said := _said(exc)) else "")
        else:
            reason = type(exc).__name__
        return AgentError(f"agent server {self.url}: {what} failed: {reason} (the client "
                          f"retries connection errors, 429 and 5xx {retries} "
                          f"time{'s' if retries != 1 else ''}){hint}")

    def _listed(self) -> list[Any]:
        try:
            return list(self._client.models.list())
        except self._openai.OpenAIError as exc:
            raise self._error("listing models", exc) from None

    def models(self) -> list[str]:
        """The model ids the server lists (``GET /models``), sorted."""
        return sorted(m.id for m in self._listed())

    def _root_json(self, what: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """The JSON answer to GET (or, with ``body``, POST) ``path`` under the server's root
        (the base URL less ``/v1``), through the client (its timeouts, retries and key);
        None for HTTP 400, 404, 405 or 422 (no such endpoint, or not with that body)."""
        try:
            if body is None:
                return self._client.get(self._root + path, cast_to=object)
            return self._client.post(self._root + path, cast_to=object, body=body)
        except self._openai.APIStatusError as exc:
            if exc.status_code in (400, 404, 405, 422):
                return None
            raise self._error(what, exc) from None
        except self._openai.OpenAIError as exc:
            raise self._error(what, exc) from None

    def check_model(self) -> None:
        """Raise ``AgentError`` listing the server's models unless it serves ``model``.

        (llama-cpp-python's server answers any model name with its own model, so the name
        is checked here, before the first generation.) Uses the checks' limits.
        """
        with self._check_limits():
            served = self.models()
        if self.model not in served:
            raise AgentError(f"agent server {self.url} does not serve model {self.model!r}; "
                             f"it serves: {', '.join(served) or '(none)'}")

    def context_window(self) -> int:
        """The server's context window in tokens: ``config.context_tokens`` when given, else
        what the server reports: the model's ``max_model_len`` in ``GET /v1/models`` (vLLM),
        else ``default_generation_settings.n_ctx`` in ``GET /props`` (llama.cpp's
        llama-server: a slot's window). llama-cpp-python's server reports neither. Raises
        ``AgentError`` (one line asking for ``--agent-context-tokens``) when nothing is
        known, or when the window leaves no room for the prompt."""
        with self._fit_lock:
            if self._window is None:
                self._window = self.config.context_tokens or self._reported_window()
        return self._window

    def _reported_window(self) -> int:
        window = next((getattr(m, "max_model_len", None) for m in self._listed()
                       if m.id == self.model), None)
        if not isinstance(window, int):
            props = self._root_json("reading /props", "/props")
            settings = props.get("default_generation_settings") if isinstance(props, dict) \
                else None
            window = settings.get("n_ctx") if isinstance(settings, dict) else None
        if not isinstance(window, int):
            raise AgentError(f"agent server {self.url} reports no context window (vLLM's "
                             "max_model_len, llama.cpp's n_ctx in /props); give it with "
                             "--agent-context-tokens N")
        if window <= self.config.max_tokens + 1:
            raise AgentError(f"agent server {self.url} reports a {window}-token context window, "
                             f"no room for a prompt and {self.config.max_tokens} generated tokens")
        return window

    @property
    def prompt_limit(self) -> int:
        """The most prompt tokens that leave room for ``max_tokens`` generated ones
        (``junction.agent.prompt.prompt_limit`` of ``context_window()``)."""
        return prompt_limit(self.context_window(), self.config.max_tokens)

    def _text_tokens(self, text: str) -> int:
        if self._tokenizer is None:
            return math.ceil(DEFAULT_TOKEN_COUNTER.count(text) * APPROX_MARGIN)
        path, field = self._tokenizer
        out = self._root_json("tokenizing", path, {"model": self.model, field: text})
        if not (isinstance(out, dict) and isinstance(out.get("tokens"), list)):
            raise AgentError(f"agent server {self.url}: {path} gave no tokens")
        return len(out["tokens"])

    def _learn_counting(self) -> None:
        """The first ``TOKENIZE_ENDPOINTS`` entry that answers, and the chat template's own
        tokens: a two-message probe's prompt tokens as the server reports them (one
        chat completion, one generated token) less its contents' tokens (64 where the
        server reports no usage)."""
        for path, text_field in TOKENIZE_ENDPOINTS:
            out = self._root_json("tokenizing", path, {"model": self.model, text_field: "probe"})
            if isinstance(out, dict) and isinstance(out.get("tokens"), list):
                self._tokenizer = (path, text_field)
                break
        reported = self._complete(_PROBE, 1).prompt_tokens
        contents = sum(self._text_tokens(m["content"]) for m in _PROBE)
        # a server that reports no usage: LlamaAgent's allowance for a chat format's markers
        self._template_tokens = reported - contents if reported > contents else 64

    def count_prompt_tokens(self, prompt: AgentPrompt) -> int:
        """The prompt's tokens as the server reads them: each message's content tokenized
        by the server (``TOKENIZE_ENDPOINTS``; none: ``APPROX_MARGIN`` times the project's
        count) plus the chat template's own tokens (measured once, ``_learn_counting``).
        Exact where the template puts each message between special tokens (ChatML, as the
        embedded Qwen2.5's: ``tests/test_remote_agent.py`` checks it against the embedded
        count)."""
        with self._fit_lock:
            if self._template_tokens is None:
                self._learn_counting()
        template_tokens = cast(int, self._template_tokens)  # set by _learn_counting
        return template_tokens + sum(self._text_tokens(m["content"]) for m in prompt.messages)

    def check_window(self) -> int:
        """Learn the context window and how the server counts tokens now, before any work
        (``context_window``, ``count_prompt_tokens``), with the checks' limits; returns the
        window in tokens."""
        with self._check_limits():
            window = self.context_window()
            self.count_prompt_tokens(AgentPrompt(_PROBE, ""))
        return window

    def generate(self, prompt: AgentPrompt) -> Generation:
        """The server's answer to ``prompt`` (greedy, capped at ``config.max_tokens``);
        ``wall_ms`` counts from when a request slot is free."""
        return self._complete(prompt.messages, self.config.max_tokens)

    def _complete(self, messages: Sequence[Mapping[str, str]], max_tokens: int) -> Generation:
        cfg = self.config
        with self._slots:
            t0 = time.perf_counter()
            try:
                # role/content dicts: the shape of openai's chat message params
                chat = cast("list[ChatCompletionMessageParam]", [dict(m) for m in messages])
                out = self._client.chat.completions.create(
                    model=self.model, messages=chat,
                    temperature=cfg.temperature, top_p=cfg.top_p, seed=cfg.seed,
                    max_tokens=max_tokens, extra_body=cfg.extra_body or None)
            except self._openai.OpenAIError as exc:
                raise self._error("a chat completion", exc) from None
            wall_ms = (time.perf_counter() - t0) * 1000
        usage = out.usage
        return Generation(out.choices[0].message.content or "",
                          int(usage.prompt_tokens) if usage else 0,
                          int(usage.completion_tokens) if usage else 0, wall_ms=wall_ms)


class RemoteExecutor(CachedExecutor):
    """The ``remote`` executor: ``execute(task, context_ids, tool_ids)`` like ``llm``
    (``CachedExecutor``), on a server's ``agent``: token counts as the server reports them,
    keys naming the server's model id, results naming ``remote`` (``RemoteAgent.endpoint``)
    and no model sha256. ``concurrency``: how many tasks of a batch may be sent at once.
    """

    name = "remote"

    def __init__(self, agent: RemoteAgent, cache: RemoteGenerationCache | None = None) -> None:
        super().__init__(agent, cache, REMOTE_GENERATIONS, agent.model, agent.config.key(),
                         {"remote": agent.endpoint})
        self.concurrency = agent.config.concurrency
