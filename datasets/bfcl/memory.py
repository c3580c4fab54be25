"""BFCL memory: contexts are the scenario's prior-conversation turns.

See the package docstring (``junction_datasets.bfcl``) for the data format.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Sequence
from functools import lru_cache

import junction_datasets.bfcl.rows as rows
from junction_datasets.bfcl.build import (
    _MEMORY_APIS,
    DEFAULT_MAX_TOKENS,
    DEFAULT_MEMORY_BACKEND,
    DEFAULT_MEMORY_POOL_SIZE,
    _build,
    _distractors,
)
from junction_datasets.bfcl.rows import BfclFunction, BfclRow, _read_jsonl, _Skip, load_category
from junction_datasets.bfcl.schemas import bfcl_to_json_schema
from junction_datasets.bfcl.tools import (
    _ToolCache,
)
from junction_datasets.registry import SuiteBuild

from junction.budget import Budget
from junction.errors import DatasetError
from junction.resources import ContextResource, SourceKind
from junction.tasks import BenchmarkTask, VerifierSpec
from junction.verifiers import normalise_answer

# --------------------------------------------------------------------------- memory

_ELLIPSIS = re.compile(r"\.\.\.|…")
_CLAUSE = re.compile(r"\.\.\.|…|[.:;!?](?:\s|$)|[—–]|\s-\s")
_QUOTES = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"'})
_FUZZY_MIN_COVERAGE = 0.75


@lru_cache(maxsize=4096)
def _words(text: str) -> tuple[str, ...]:
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES).lower()
    return tuple(re.findall(r"\w+", text))


def _has_run(haystack: Sequence[str], needle: Sequence[str]) -> bool:
    k = len(needle)
    first = needle[0]
    return any(haystack[i] == first and tuple(haystack[i:i + k]) == tuple(needle)
               for i in range(len(haystack) - k + 1))


def _pieces(source: str, pattern: re.Pattern[str]) -> list[tuple[str, ...]]:
    return [w for w in (_words(p) for p in pattern.split(source)) if w]


def match_source_turns(source: str, turns: Sequence[str]) -> tuple[list[int], str]:
    """Indexes of the turns that hold a BFCL memory ``source`` excerpt, and the rule used.

    Text is compared as word sequences (NFKC, curly quotes straightened, lower case,
    punctuation ignored). Rules, first that matches any turn wins:
    ``exact``: every ellipsis-separated fragment of the excerpt occurs in the turn;
    ``clauses``: every clause (split also at sentence punctuation and dashes) occurs in it
    (excerpts that join a label to a later sentence: "Monday: Need to ...");
    ``fuzzy``: the single turn holding the most of the excerpt's word bigrams, if it holds
    at least 75% of them (lightly paraphrased excerpts). No match gives ``([], "none")``.
    """
    words = [_words(t) for t in turns]
    for rule, pattern in (("exact", _ELLIPSIS), ("clauses", _CLAUSE)):
        pieces = _pieces(source, pattern)
        if not pieces:
            return [], "none"
        hits = [i for i, w in enumerate(words) if all(_has_run(w, p) for p in pieces)]
        if hits:
            return hits, rule
    source_words = _words(source)
    bigrams = set(itertools.pairwise(source_words))
    if not bigrams:
        return [], "none"
    coverage = [len(bigrams & set(itertools.pairwise(w))) / len(bigrams) for w in words]
    best = max(coverage, default=0.0)
    if best >= _FUZZY_MIN_COVERAGE and coverage.count(best) == 1:
        return [coverage.index(best)], "fuzzy"
    return [], "none"


def _scenario_conversations(scenario: str) -> list[tuple[str, str, list[str]]]:
    """The scenario's prior conversations, file order: (id, topic, turn texts); a turn's
    text is its messages, one per line. Raises ``DatasetError`` naming the file on a
    malformed conversation (or when the file is missing)."""
    name = f"memory_prereq_conversation/memory_{scenario}.json"
    out = []
    for conversation in _read_jsonl(name):
        if not isinstance(conversation, dict) or not isinstance(conversation.get("question"), list):
            raise DatasetError(f"{name}: malformed conversation {str(conversation)[:80]!r}")
        turns = ["\n".join(m["content"] for m in turn) for turn in conversation["question"]]
        out.append((conversation["id"], str(conversation.get("topic", "")), turns))
    return out


def _scenario_contexts(scenario: str) -> tuple[ContextResource, ...]:
    """One ``memory`` context per turn of the scenario's prior conversations, file order.

    Ids are ``<conversation id>-turn-<NN>``; content is the turn's messages, one per line.
    """
    return tuple(
        ContextResource.from_text(
            f"{cid}-turn-{j:02d}", content, SourceKind.MEMORY,
            metadata={"scenario": scenario, "conversation": cid, "turn": j, "topic": topic},
        )
        for cid, topic, turns in _scenario_conversations(scenario)
        for j, content in enumerate(turns)
    )


def _memory_answer(row: BfclRow) -> tuple[list[str], str]:
    """A memory row's accepted answers and ``source`` excerpt; ``_Skip("malformed_answer")``
    when they are not a non-empty list of strings and a string."""
    answer = row.extra["answer"]
    answers, source = answer.get("ground_truth"), answer.get("source")
    if (not isinstance(answers, list) or not answers
            or not all(isinstance(a, str) for a in answers) or not isinstance(source, str)):
        raise _Skip("malformed_answer")
    return answers, source


def _api_functions(api: str) -> list[BfclFunction]:
    out = []
    for i, fn in enumerate(_read_jsonl(f"multi_turn_func_doc/{api}.json")):
        if not isinstance(fn, dict) or "name" not in fn:
            raise DatasetError(f"multi_turn_func_doc/{api}.json line {i + 1}: no function name")
        params = bfcl_to_json_schema(fn.get("parameters", {}), f"{api}.{fn['name']}.parameters")
        out.append(BfclFunction(fn["name"], str(fn.get("description", "")), params))
    return out


def _distractor_apis() -> list[str]:
    docs = rows._data_root() / "multi_turn_func_doc"
    return sorted(p.name[:-5] for p in docs.iterdir()
                  if p.name.endswith(".json") and not p.name.startswith("memory_"))


def memory_suite(
    seed: int = 0,
    size: int | None = None,
    pool_size: int = DEFAULT_MEMORY_POOL_SIZE,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    backend: str = DEFAULT_MEMORY_BACKEND,
    suite: str = "bfcl-memory",
    split: str = "eval",
) -> SuiteBuild:
    """``bfcl-memory``: answer a question about the user from earlier conversations.

    Contexts: every turn of the scenario's prior conversations (see
    ``_scenario_contexts``). Tools: the ``backend`` memory API (``memory_kv``,
    ``memory_vector`` or ``memory_rec_sum``) plus seeded distractors from the other
    multi-turn APIs, ``pool_size`` in all, ordered by id. Gold contexts: the turns that
    ``match_source_turns`` finds for the answer's ``source``. Verifier ``context_answer``
    with the accepted answers. Extra skip reasons: ``unknown_scenario``,
    ``malformed_answer``, ``source_not_found``, ``answer_not_in_source_turn`` (no accepted
    answer occurs, case- and whitespace-normalised, in a gold turn: the verifier could not
    credit a correct exposure, e.g. "05:30 AM" against "5:30 AM"). The verifier matches
    substrings, so a short answer ("Michael", "35") also occurs in other turns;
    ``metadata["answer_turns"]`` counts the turns that would satisfy it (context recall
    against the gold turns is the stricter measure).
    """
    if backend not in _MEMORY_APIS:
        raise ValueError(f"unknown memory backend {backend!r}; valid: {', '.join(_MEMORY_APIS)}")
    loaded = load_category("memory", require_functions=False)
    api = _api_functions(backend)
    api_names = [f.name for f in api]
    catalog: dict[str, BfclFunction] = {}
    for name in _distractor_apis():
        for fn in _api_functions(name):
            catalog.setdefault(fn.name, fn)
    scenarios: dict[str, tuple[tuple[ContextResource, ...], list[str]]] = {}
    cache = _ToolCache()

    def make_task(row: BfclRow) -> BenchmarkTask:
        scenario = row.extra.get("scenario")
        if not isinstance(scenario, str):
            raise _Skip("unknown_scenario")
        if scenario not in scenarios:
            try:
                contexts = _scenario_contexts(scenario)
                scenarios[scenario] = (contexts, [normalise_answer(c.content) for c in contexts])
            except DatasetError:
                raise _Skip("unknown_scenario") from None
        contexts, normalised_contents = scenarios[scenario]
        answers, source = _memory_answer(row)
        hits, rule = match_source_turns(source, [c.content for c in contexts])
        if not hits:
            raise _Skip("source_not_found")
        normalised = [normalise_answer(a) for a in answers if a.strip()]
        holds = [i for i, content in enumerate(normalised_contents)
                 if any(a in content for a in normalised)]
        if not set(hits) & set(holds):
            raise _Skip("answer_not_in_source_turn")
        extra = _distractors(catalog, api_names, pool_size - len(api), suite, seed, row.id)
        tools = cache.tools((*api, *extra))
        return BenchmarkTask(
            task_id=f"{suite}-{row.id}",
            suite=suite,
            objective=row.objective,
            contexts=contexts,
            tools=tools,
            budget=Budget(max_tokens=max_tokens),
            gold_context_ids=tuple(contexts[i].id for i in hits),
            verifier=VerifierSpec(kind="context_answer", params={"answers": answers}),
            metadata={"bfcl_id": row.id, "bfcl_category": "memory", "scenario": scenario,
                      "source": source, "source_match": rule, "memory_backend": backend,
                      "answer_turns": len(holds), "listed_tool_ids": sorted(api_names)},
        )

    return _build(loaded, suite, seed, size, make_task,
                  f"{backend} + distractors = {pool_size} tools, budget {max_tokens} tokens",
                  split)


MEMORY_REFERENCE_NOTE = (
    "On this suite bfcl_listed shows what BFCL's own setting gives the model: the memory "
    "API plus the scenario's whole prior conversation (every turn, outside the budget), "
    "which BFCL replays to the model before it asks the question; Junction's single-turn "
    "agent reads the turns as documents. Its agent success is what the agent does when "
    "nothing is selected away, the budgeted strategies' ceiling for this agent; its "
    "verified success is 100% by construction (every turn is exposed). A conversation "
    "longer than the agent's context window (with the memory API's 2,148 tokens, four of "
    "the five scenarios exceed the embedded agent's 8,192 tokens) is cut: the agent sees "
    "the most recent turns that fit, the prompt says how many earlier ones were left out, "
    "and the trace lists them (`agent_dropped_context_ids`); an answer in a left-out turn "
    "is then out of the agent's reach.")
"""bfcl-memory's ``SuiteInfo.reference_note``: what ``bfcl_listed`` exposes there
(``junction.strategies.references``; the window rule: ``junction.agent.prompt.fit_prompt``;
2,148 tokens: the memory_kv API's prompt with no document, Qwen2.5's tokenizer)."""
