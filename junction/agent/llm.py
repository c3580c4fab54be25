"""The ``llm`` executor: a local instruct model acts on an exposed set.

The prompt is BFCL's prompting layout, fitted to the model's context window
(``junction.agent.prompt``); the executor reads only ``task.router_view()`` and the exposed
ids: never gold, never the verifier, never metadata.

Decoding is greedy (temperature 0, top-k 1, fixed seed and thread count) with a cap on
generated tokens (``AgentConfig``). Results are cached persistently by (model sha256,
prompt sha256, decoding settings) in ``AgentCache`` (``junction.agent.generations``); a hit
returns the stored text and token counts byte for byte. The previous call's KV cache is
reused in whole ``n_batch`` (512-token) blocks of shared prompt prefix only
(``LlamaAgent.generate``), so the text never depends on what was asked before: questions
over one long shared system prompt (a scenario's whole conversation) pay for little more
than the question.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

from junction.agent.generations import EMBEDDED_GENERATIONS, AgentCache, CachedExecutor, Generation
from junction.agent.prompt import AgentError, AgentPrompt, prompt_limit

if TYPE_CHECKING:
    from llama_cpp.llama_types import ChatCompletionRequestMessage, CreateChatCompletionResponse

__all__ = ["AgentConfig", "LLMExecutor", "LlamaAgent", "kept_prefix"]


def kept_prefix(common: int, n_prompt: int, n_batch: int) -> int:
    """Tokens of a prompt of ``n_prompt`` tokens taken from the KV cache when it shares its
    first ``common`` tokens with the cached one: the whole ``n_batch`` blocks of that
    prefix, less one block when that is the whole prompt (its last block is evaluated
    again, so the model has logits to sample from); 0 when none (``LlamaAgent.generate``)."""
    keep = common // n_batch * n_batch
    if keep >= n_prompt:
        keep -= n_batch
    return max(keep, 0)


@dataclass(frozen=True)
class AgentConfig:
    """Decoding settings of the ``llm`` executor (all part of the cache key).

    ``max_tokens``: cap on generated tokens (192 holds four BFCL calls); ``n_ctx``: context
    window in tokens (the whole 16-tool pool is about 3,500 prompt tokens); ``n_threads``:
    llama.cpp threads (1 by default, as for the judge: on the shared 2-core machine one
    thread scored 4x faster than two, ``docs/measurement.md``; use 2 on a quiet machine);
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


def _chat_messages(prompt: AgentPrompt) -> list[ChatCompletionRequestMessage]:
    """A copy of the prompt's messages for llama-cpp-python (``role`` system or user and
    ``content``, the shape its chat message types describe)."""
    return cast("list[ChatCompletionRequestMessage]", [dict(m) for m in prompt.messages])


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
        """The most prompt tokens that leave room for ``max_tokens`` generated ones
        (``junction.agent.prompt.prompt_limit`` of ``n_ctx``)."""
        return prompt_limit(self.config.n_ctx, self.config.max_tokens)

    def prompt_token_ids(self, prompt: AgentPrompt) -> list[int] | None:
        """The prompt's token ids as ``generate`` feeds them: the model's own chat template
        (llama-cpp-python's ``Jinja2ChatFormatter``, as ``create_chat_completion`` renders
        it for a GGUF with a template), tokenized with special tokens; None for a model
        without a template (llama-cpp-python then picks another chat format)."""
        if self._formatter is None:
            return None
        result = self._formatter(messages=_chat_messages(prompt))
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
        at any other boundary changed the text (docs/measurement.md, the agent's cost)."""
        llm = self._llm
        keep = 0
        if ids is not None and llm.n_tokens > 0:
            common = type(llm).longest_token_prefix(llm.input_ids[:llm.n_tokens].tolist(),
                                                    ids)
            keep = kept_prefix(common, len(ids), llm.n_batch)
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
            out = cast("CreateChatCompletionResponse",  # not streamed: one response
                       self._llm.create_chat_completion(
                           messages=_chat_messages(prompt), temperature=cfg.temperature,
                           top_k=cfg.top_k, top_p=1.0, min_p=0.0, repeat_penalty=1.0,
                           seed=cfg.seed, max_tokens=cfg.max_tokens))
            wall_ms = (time.perf_counter() - t0) * 1000
        usage = out["usage"]
        return Generation(out["choices"][0]["message"]["content"] or "",
                          int(usage["prompt_tokens"]), int(usage["completion_tokens"]),
                          wall_ms=wall_ms)


class LLMExecutor(CachedExecutor):
    """The ``llm`` executor: ``execute(task, context_ids, tool_ids)`` like the toy one
    (``CachedExecutor``), on the embedded ``agent``; keys and results name the model by its
    file's sha256.
    """

    name = "llm"

    def __init__(self, agent: LlamaAgent, cache: AgentCache | None = None) -> None:
        super().__init__(agent, cache, EMBEDDED_GENERATIONS, agent.model_sha256,
                         agent.config.key(), {"model_sha256": agent.model_sha256})
