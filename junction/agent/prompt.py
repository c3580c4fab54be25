"""The agent's prompt: BFCL's prompting layout for an exposed set, fitted to a window.

Layout (BFCL's prompting layout for models without a function-calling template, see
``junction.agent.bfcl_checker.system_prompt``): the system message is BFCL's default system
prompt listing the exposed tools as JSON (``{"name", "description", "parameters"}`` from
each ``ToolResource``; ids sorted), followed, when contexts are exposed, by a documents
block (``DOCUMENTS_HEADER`` then ``[document <id>]`` and the content, ids sorted); the user
message is the task's objective. The agent answers ``[func(arg=value)]`` or plain text
(``parse_output``).

``render_prompt`` takes a ``RouterView``: never gold, never the verifier, never metadata.

A prompt that does not fit the model's context window with room for the generation (a
reference's whole prior conversation can take 20,000 tokens) keeps the most recent exposed
contexts that fit, oldest left out first in the view's order, and says so in the prompt
(``LEFT_OUT_NOTE``); ``fit_prompt`` names the contexts left out, and the trace records them
(``agent_dropped_context_ids``). Prompts that fit are rendered unchanged. Both agents (the
embedded ``junction.agent.llm`` and the ``junction.agent.remote`` one) fit their prompts
here, each counting tokens as its model reads them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from junction.agent.bfcl_checker import DecodeError, decode_calls, system_prompt
from junction.errors import JunctionError
from junction.tasks import RouterView

__all__ = [
    "BFCL_LAYOUT",
    "DOCUMENTS_HEADER",
    "LEFT_OUT_NOTE",
    "QUESTION_RESERVE",
    "AgentError",
    "AgentPrompt",
    "PromptLayout",
    "fit_prompt",
    "parse_output",
    "prompt_limit",
    "render_prompt",
]

DOCUMENTS_HEADER = ("Here are documents that may help. If they answer the question, reply "
                    "with the answer in plain text instead of a function call.")
"""Introduces the exposed contexts after BFCL's system prompt (Junction's addition)."""

LEFT_OUT_NOTE = "[{n} earlier documents left out: they do not fit the context window]"
"""Follows ``DOCUMENTS_HEADER`` when ``fit_prompt`` left ``n`` contexts out."""



@dataclass(frozen=True)
class PromptLayout:
    """What a suite's agent is told around BFCL's system prompt: ``documents_header``
    introduces the exposed contexts; ``question`` is the user message, a ``str.format``
    template with ``{objective}`` (the router view's objective). A grader of the catalog
    (``junction.agent.graders``) names the layout of its suites; others get
    ``BFCL_LAYOUT``."""

    documents_header: str
    question: str = "{objective}"


BFCL_LAYOUT = PromptLayout(DOCUMENTS_HEADER)
"""BFCL's layout: ``DOCUMENTS_HEADER``, the objective as the user message."""

QUESTION_RESERVE = 128
"""Prompt tokens ``fit_prompt`` keeps for the user message when it fits the system message,
so that questions shorter than this (every BFCL memory question) over the same exposed set
get the same system message, hence a shared prompt prefix llama.cpp reuses."""


class AgentError(JunctionError):
    """The agent model cannot be loaded or its cache cannot be opened; also raised when a
    prompt cannot fit the window, and (one line naming the URL) when an agent server
    fails."""


def prompt_limit(n_ctx: int, max_tokens: int) -> int:
    """The most prompt tokens a ``n_ctx``-token window holds with room for ``max_tokens``
    generated ones: ``n_ctx - max_tokens - 1`` (llama-cpp-python refuses a prompt of
    ``n_ctx`` tokens or more and shortens the generation when prompt + cap reaches
    ``n_ctx``; an OpenAI-compatible server refuses prompt + ``max_tokens`` over its window).
    """
    return n_ctx - max_tokens - 1


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
                  question: str | None = None,
                  layout: PromptLayout = BFCL_LAYOUT) -> AgentPrompt:
    """The agent's prompt for the exposed set (layout in the module docstring; ``layout``
    gives the documents header and the user message, BFCL's by default).

    ``left_out`` > 0 adds ``LEFT_OUT_NOTE`` after the documents header (``fit_prompt``);
    ``question`` replaces the user message (``fit_prompt`` measures the system message
    with an empty one). Raises ``KeyError`` naming an id that is not a resource of the
    view.
    """
    if not isinstance(view, RouterView):
        raise TypeError(f"render_prompt takes a RouterView, got {type(view).__name__}")
    tools = [_tool_doc(view, t) for t in sorted(tool_ids)]
    system = system_prompt(tools)
    contexts = [view.context(c) for c in sorted(context_ids)]
    if contexts or left_out:
        header = layout.documents_header + ("\n" + LEFT_OUT_NOTE.format(n=left_out)
                                            if left_out else "")
        blocks = [f"[document {c.id}]\n{c.content}" for c in contexts]
        system = system.rstrip("\n") + "\n\n" + header + "\n" + "\n\n".join(blocks) + "\n"
    messages = ({"role": "system", "content": system},
                {"role": "user", "content": (layout.question.format(objective=view.objective)
                                             if question is None else question)})
    canonical = json.dumps(messages, sort_keys=True, ensure_ascii=False)
    return AgentPrompt(messages, hashlib.sha256(canonical.encode("utf-8")).hexdigest())


def fit_prompt(view: RouterView, context_ids: Iterable[str], tool_ids: Iterable[str],
               count: Callable[[AgentPrompt], int],
               limit: int, layout: PromptLayout = BFCL_LAYOUT,
               ) -> tuple[AgentPrompt, tuple[str, ...]]:
    """``render_prompt`` of the exposed set (in ``layout``), fitted to ``limit`` prompt
    tokens.

    ``count`` gives a prompt's tokens as the model will read them (``LlamaAgent.
    count_prompt_tokens``, ``RemoteAgent.count_prompt_tokens``); ``limit``: prompt tokens
    (``prompt_limit``). When the whole prompt fits it is returned unchanged with no id
    left out. Otherwise the exposed contexts are kept from the most recent (last in the
    view's context order) back, as many as fit with ``QUESTION_RESERVE`` tokens kept for
    the question (a binary search: tokens grow with each context kept), then more are left
    out while the actual question does not fit. Returns (prompt, ids left out, view
    order). Raises ``AgentError`` when the prompt does not fit even with every context left
    out (the tool schemas alone exceed the window).
    """
    cs, ts = tuple(sorted(context_ids)), tuple(sorted(tool_ids))
    counted: dict[str, int] = {}  # each distinct prompt counted once (a remote count is a request)

    def tokens(p: AgentPrompt) -> int:
        if p.sha256 not in counted:
            counted[p.sha256] = count(p)
        return counted[p.sha256]

    whole = render_prompt(view, cs, ts, layout=layout)
    if tokens(whole) <= limit:
        return whole, ()
    exposed = set(cs)
    ordered = [c.id for c in view.contexts if c.id in exposed]

    def prompt(kept: int, question: str | None = None) -> AgentPrompt:
        return render_prompt(view, ordered[len(ordered) - kept:] if kept else (), ts,
                             left_out=len(ordered) - kept, question=question, layout=layout)

    low, high = 0, len(ordered) - 1  # the most kept with the question reserve fitting
    if tokens(prompt(0, "")) + QUESTION_RESERVE > limit:
        high = -1
    while low < high:
        mid = (low + high + 1) // 2
        if tokens(prompt(mid, "")) + QUESTION_RESERVE <= limit:
            low = mid
        else:
            high = mid - 1
    kept = max(high, 0)
    while kept > 0 and tokens(prompt(kept)) > limit:
        kept -= 1
    fitted = prompt(kept)
    if tokens(fitted) > limit:
        raise AgentError(f"the agent's prompt takes {tokens(fitted)} tokens with every "
                         f"context left out, over its {limit}-token limit: fewer tools "
                         "or a larger n_ctx")
    return fitted, tuple(ordered[:len(ordered) - kept])


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
