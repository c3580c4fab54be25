"""BFCL sub-tasks: admit the on-topic proposal, reject the off-topic one and the echo.

See the package docstring (``junction_datasets.bfcl``) for the data format.
"""

from __future__ import annotations

import re

from junction_datasets.bfcl.build import _build, _rng
from junction_datasets.bfcl.rows import BfclRow, _Skip, load_category
from junction_datasets.registry import SuiteBuild

from junction.budget import Budget
from junction.resources import ContextResource
from junction.tasks import BenchmarkTask, VerifierSpec
from junction.verifiers import normalise_answer

# --------------------------------------------------------------------------- sub-tasks

_SENTENCE = re.compile(r"(?<=[.!?])\s+")
SUBTASK_KINDS = ("on_topic", "off_topic", "echo")
"""The proposals of a ``bfcl-subtasks`` task; only ``on_topic`` should be admitted."""


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text.strip()) if s.strip()]


def _longest_sentence(text: str) -> str:
    """The longest sentence of ``text`` (characters; the first of equals): an actual ask,
    where a first sentence is often a preamble ("Can you help me with two tasks?")."""
    return max(_sentences(text), key=len, default="")


def subtask_suite(
    seed: int = 0,
    size: int | None = None,
    category: str = "parallel_multiple",
    suite: str = "bfcl-subtasks",
) -> SuiteBuild:
    """``bfcl-subtasks``: which proposed sub-tasks of a BFCL request should be admitted.

    Per row of ``category`` (default ``parallel_multiple``: requests of two or more asks,
    "Find the area of ... Also, calculate ..."), the objective is the row's last user
    message (the original task, and the proposals' only ancestor) and the contexts are three
    proposed sub-tasks, the dataset's words only (``SUBTASK_KINDS``):

    - ``on_topic``: the request's longest sentence (``_longest_sentence``: a part of the
      task, so it follows from it and is not an echo of it), the one gold context;
    - ``off_topic``: the longest sentence of another row's request (seeded), which does not
      follow;
    - ``echo``: the whole request, copied verbatim (paraphrase-free): an echo of the ancestor.

    Context ids ``proposal-1`` .. ``proposal-3`` are dealt in a seeded order, so neither an
    id nor a position tells the kinds apart (``metadata["proposals"]``, id -> kind, stays in
    the task's metadata, out of the router view); contexts carry no metadata. Budget: the
    three proposals' tokens (admission, not the budget, decides). Verifier
    ``contexts_exact``: success when exactly the on-topic proposal is exposed; context
    precision and recall are the precision and recall of the admit decision. Skip reasons
    beside ``load_category``'s: ``one_sentence`` (nothing to split off), ``no_off_topic``
    (no other row's longest sentence is foreign to the request).
    """
    loaded = load_category(category)
    firsts = {}
    for row in loaded.rows:
        users = [content for role, content in row.messages if role == "user"]
        if users and _sentences(users[-1]):
            firsts[row.id] = _longest_sentence(users[-1])

    def make_task(row: BfclRow) -> BenchmarkTask:
        request = [content for role, content in row.messages if role == "user"][-1].strip()
        sentences = _sentences(request)
        if len(sentences) < 2:
            raise _Skip("one_sentence")
        others = sorted(rid for rid, first in firsts.items()
                        if rid != row.id and normalise_answer(first) not in
                        normalise_answer(request))
        if not others:
            raise _Skip("no_off_topic")
        rng = _rng("subtasks", suite, seed, row.id)
        texts = {"on_topic": firsts[row.id], "off_topic": firsts[rng.choice(others)],
                 "echo": request}
        kinds = list(SUBTASK_KINDS)
        rng.shuffle(kinds)
        ids = {kind: f"proposal-{i + 1}" for i, kind in enumerate(kinds)}
        contexts = tuple(ContextResource.from_text(ids[k], texts[k]) for k in kinds)
        return BenchmarkTask(
            task_id=f"{suite}-{row.id}",
            suite=suite,
            objective=request,
            contexts=contexts,
            budget=Budget(max_tokens=sum(c.token_cost for c in contexts)),
            gold_context_ids=(ids["on_topic"],),
            verifier=VerifierSpec(kind="contexts_exact"),
            metadata={"bfcl_id": row.id, "bfcl_category": f"subtasks_{category}",
                      "proposals": {ids[k]: k for k in kinds}},
        )

    # every row (split "all"): nothing learns on this suite, and its off-topic proposals are
    # drawn from every row's request
    return _build(loaded, suite, seed, size, make_task,
                  "3 proposed sub-tasks per request: on-topic, off-topic, echo", "all")
