"""BFCL memory as pages: one chunked HTML page of prior conversations per scenario.

See the package docstring (``junction_datasets.bfcl``) for the data format.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from junction_datasets.bfcl.build import DEFAULT_MAX_TOKENS, _build
from junction_datasets.bfcl.memory import (
    _memory_answer,
    _scenario_conversations,
    match_source_turns,
)
from junction_datasets.bfcl.rows import BfclRow, _Skip, load_category
from junction_datasets.registry import SuiteBuild

from junction.budget import Budget
from junction.errors import DatasetError
from junction.pages.chunking import Chunk, chunk_page
from junction.resources import ContextResource, SourceKind
from junction.tasks import BenchmarkTask, VerifierSpec
from junction.verifiers import normalise_answer

# --------------------------------------------------------------------------- memory pages

PAGE_TOP_K = 5
"""Chunks the page strategies admit per task (``junction.pages.admission.DEFAULT_TOP_K``'s
five)."""

PAGE_CHUNK_TOKENS = DEFAULT_MAX_TOKENS // PAGE_TOP_K
"""Largest chunk of a memory page (tokens): 1024 // 5 = 204, so ``PAGE_TOP_K`` whole chunks
always fit the task's ``DEFAULT_MAX_TOKENS`` budget."""

PAGE_POOL_LIMIT = 16
"""Chunks per task handed to a strategy (the BM25 top 16): the judge scores each of them,
about 16 × 64 document tokens per task (``STRATEGY_JUDGE_CONFIG``)."""

PAGE_MIN_BUDGETS = 4
"""A page must cost more than this many task budgets, so admission has to choose: the
notetaker scenario's page (780 tokens) fits the budget whole and is skipped
(``page_within_budget``); the others cost 5 to 20 budgets."""


def _turn_html(turn: str) -> str:
    """One turn as a paragraph: its messages (one per line) HTML-escaped, ``<br>`` between."""
    return "<p>" + "<br>".join(html.escape(m) for m in turn.split("\n")) + "</p>"


def scenario_page_html(scenario: str) -> str:
    """The scenario's prior conversations as one HTML page: per conversation an ``h1``
    holding its topic (its id when the topic is empty), then one ``p`` per turn (a turn's
    messages separated by ``<br>``). The words are the dataset's; the markup is ours and
    the text is HTML-escaped. Raises ``DatasetError`` as ``_scenario_conversations``."""
    parts = [f"<!DOCTYPE html>\n<html><head><title>{html.escape(scenario)}</title></head><body>"]
    for cid, topic, turns in _scenario_conversations(scenario):
        parts.append(f"<h1>{html.escape(topic.strip() or cid)}</h1>")
        for turn in turns:
            parts.append(_turn_html(turn))
    parts.append("</body></html>")
    return "\n".join(parts)


@dataclass(frozen=True)
class _Page:
    """A scenario's page: its chunks as contexts, each turn's span in the page text, the
    turn texts and the contexts' normalised contents (for the answer check)."""

    contexts: tuple[ContextResource, ...]
    chunks: tuple[Chunk, ...]
    turn_spans: tuple[tuple[int, int], ...]
    turns: tuple[str, ...]
    normalised: tuple[str, ...]
    tokens: int


def _scenario_page(scenario: str, chunk_tokens: int) -> _Page:
    """Chunk the scenario's page; locate every turn's paragraph in the page text.

    Context ids are ``memory-<scenario>#c<NNN>`` (chunk index); metadata: ``page_id``,
    ``heading_path``, ``chunk_index``, ``start``/``end`` (character offsets in the page
    text), ``cut`` and ``scenario``: nothing from the answer file.
    """
    page_id = f"memory-{scenario}"
    page = chunk_page(scenario_page_html(scenario), max_tokens=chunk_tokens)
    contexts = tuple(
        ContextResource(
            id=f"{page_id}#c{c.index:03d}", content=c.text, token_cost=c.token_cost,
            source=SourceKind.MEMORY,
            metadata={"page_id": page_id, "heading_path": c.heading_path,
                      "chunk_index": c.index, "start": c.start, "end": c.end, "cut": c.cut,
                      "scenario": scenario})
        for c in page.chunks)
    turns = [t for _, _, ts in _scenario_conversations(scenario) for t in ts]
    spans, cursor = [], 0
    for turn in turns:  # a turn's paragraph, as the chunker wrote it into the page text
        paragraph = chunk_page(_turn_html(turn)).text
        at = page.text.find(paragraph, cursor) if paragraph else -1
        if at < 0:
            spans.append((-1, -1))
            continue
        spans.append((at, at + len(paragraph)))
        cursor = at + len(paragraph)
    return _Page(contexts, page.chunks, tuple(spans), tuple(turns),
                 tuple(normalise_answer(c.content) for c in contexts),
                 sum(c.token_cost for c in page.chunks))


def memory_pages_suite(
    seed: int = 0,
    size: int | None = None,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    chunk_tokens: int = PAGE_CHUNK_TOKENS,
    suite: str = "bfcl-memory-pages",
    split: str = "eval",
) -> SuiteBuild:
    """``bfcl-memory-pages``: answer a question about the user from one long page.

    Per memory row: the scenario's prior conversations rendered as one HTML page
    (``scenario_page_html``) and chunked (``junction.pages.chunking.chunk_page``, chunks of at
    most ``chunk_tokens``); every chunk is a ``memory`` context (``_scenario_page``); no
    tools; budget ``max_tokens`` visible tokens. Gold contexts: the chunks that overlap a
    turn holding the answer's ``source`` excerpt (``match_source_turns`` over the turns).
    Verifier ``context_answer``: an exposed chunk contains an accepted answer. Skip
    reasons, beside the memory suite's (``unknown_scenario``, ``malformed_answer``,
    ``source_not_found``): ``page_within_budget`` (the page costs at most
    ``PAGE_MIN_BUDGETS`` budgets), ``turn_not_in_page`` (a gold turn's paragraph was not
    found in the page text), ``answer_not_in_source_chunk`` (no accepted answer occurs in a
    gold chunk). ``bfcl_category`` is ``memory_pages``: the agent and the references,
    which read a BFCL memory row's tools, do not run on it. ``split``: the memory rows'
    part (``split_of``, the same rows as ``bfcl-memory``'s).
    """
    loaded = load_category("memory", require_functions=False)
    pages: dict[str, _Page | None] = {}

    def make_task(row: BfclRow) -> BenchmarkTask:
        scenario = row.extra.get("scenario")
        if not isinstance(scenario, str):
            raise _Skip("unknown_scenario")
        if scenario not in pages:
            try:
                pages[scenario] = _scenario_page(scenario, chunk_tokens)
            except DatasetError:
                pages[scenario] = None
        page = pages[scenario]
        if page is None:
            raise _Skip("unknown_scenario")
        answers, source = _memory_answer(row)
        if page.tokens <= PAGE_MIN_BUDGETS * max_tokens:
            raise _Skip("page_within_budget")
        hits, rule = match_source_turns(source, page.turns)
        if not hits:
            raise _Skip("source_not_found")
        if any(page.turn_spans[i][0] < 0 for i in hits):
            raise _Skip("turn_not_in_page")
        gold = [k for k, c in enumerate(page.chunks)
                if any(c.start < page.turn_spans[i][1] and page.turn_spans[i][0] < c.end
                       for i in hits)]
        normalised = [normalise_answer(a) for a in answers if a.strip()]
        holds = [k for k, content in enumerate(page.normalised)
                 if any(a in content for a in normalised)]
        if not set(gold) & set(holds):
            raise _Skip("answer_not_in_source_chunk")
        return BenchmarkTask(
            task_id=f"{suite}-{row.id}",
            suite=suite,
            objective=row.objective,
            contexts=page.contexts,
            budget=Budget(max_tokens=max_tokens),
            gold_context_ids=tuple(page.contexts[k].id for k in gold),
            verifier=VerifierSpec(kind="context_answer", params={"answers": answers}),
            metadata={"bfcl_id": row.id, "bfcl_category": "memory_pages",
                      "scenario": scenario, "source": source, "source_match": rule,
                      "page_id": f"memory-{scenario}", "page_tokens": page.tokens,
                      "answer_chunks": len(holds)},
        )

    return _build(loaded, suite, seed, size, make_task,
                  f"one page per scenario, chunks of at most {chunk_tokens} tokens, "
                  f"budget {max_tokens} tokens", split)
