"""Page admission: the bfcl-memory-pages suite and the top-K page strategies.

Suite tests on hand-made data run everywhere; real-row tests read the pinned ``bfcl-eval``
package (skipped when missing); the judge test shares the session's loaded model.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest
from junction_datasets import SUITES, bfcl, build_suite

from junction.agent.execution import execute
from junction.budget import Budget
from junction.evaluate import evaluate_batch
from junction.pages.chunking import chunk_page
from junction.resources import ContextResource
from junction.strategies import make_strategy
from junction.strategies.page_admission import (
    context_document,
    make_bm25_top_k_strategy,
    make_judge_top_k_strategy,
)
from junction.tasks import BenchmarkTask, VerifierSpec
from junction.units import UnitSpec
from junction.verifiers import verify
from tests.helpers import needs_data, write_bfcl_category

FILLER = "We talked about the weather and the week ahead in some detail today."


def _fake_data(root, monkeypatch) -> None:
    """One scenario, two conversations; the second holds the answer; a topic with markup."""
    conversations = [
        {"id": "memory_prereq_0-home-0", "topic": "Moving <house> & home", "question": [
            [{"role": "user", "content": f"Hi there, I just moved. {FILLER * 3}"}],
            [{"role": "user", "content": f"<b>Not markup</b> & more. {FILLER * 3}"}],
        ]},
        {"id": "memory_prereq_1-home-1", "topic": "", "question": [
            [{"role": "user", "content": f"{FILLER * 2} My cat is called Biscuit and she "
                                         f"is 4. {FILLER}"}],
            [{"role": "user", "content": FILLER * 4}],
        ]},
    ]
    (root / "memory_prereq_conversation").mkdir()
    (root / "memory_prereq_conversation" / "memory_home.json").write_text(
        "\n".join(json.dumps(c) for c in conversations), encoding="utf-8")
    questions = [
        {"id": "m_ok", "question": [[{"role": "user", "content": "What is my cat called?"}]],
         "scenario": "home"},
        {"id": "m_where", "question": [[{"role": "user", "content": "Where?"}]],
         "scenario": "garden"},
        {"id": "m_nosrc", "question": [[{"role": "user", "content": "Dog?"}]],
         "scenario": "home"},
        {"id": "m_noans", "question": [[{"role": "user", "content": "Age?"}]],
         "scenario": "home"},
    ]
    answers = [
        {"id": "m_ok", "ground_truth": ["biscuit"], "source": "...called Biscuit..."},
        {"id": "m_where", "ground_truth": ["x"], "source": "x"},
        {"id": "m_nosrc", "ground_truth": ["Rex"], "source": "My dog is Rex."},
        {"id": "m_noans", "ground_truth": ["four"], "source": "she is 4"},
    ]
    write_bfcl_category(root, "memory", questions, answers)
    monkeypatch.setattr(bfcl.rows, "_data_root", lambda: root)


def test_page_is_the_dataset_words_in_our_markup(tmp_path, monkeypatch):
    _fake_data(tmp_path, monkeypatch)
    html = bfcl.scenario_page_html("home")
    # the dataset's text is escaped: its "<b>" is words, not markup
    assert "<h1>Moving &lt;house&gt; &amp; home</h1>" in html
    assert "<p>&lt;b&gt;Not markup&lt;/b&gt; &amp; more." in html
    # an empty topic falls back to the conversation id
    assert "<h1>memory_prereq_1-home-1</h1>" in html
    page = chunk_page(html)
    assert page.text.startswith("Moving <house> & home\n\nHi there, I just moved.")
    assert "<b>Not markup</b> & more." in page.text


def test_pages_suite_gold_chunks_verifier_and_skips(tmp_path, monkeypatch):
    _fake_data(tmp_path, monkeypatch)
    # chunks of at most 40 tokens: every turn (about 50-60 tokens) is cut at sentences;
    # the page (about 230 tokens) is more than 4 budgets of 50 tokens
    build = bfcl.memory_pages_suite(size=None, max_tokens=50, chunk_tokens=40, split="all")
    assert build.rows_skipped == {"answer_not_in_source_chunk": 1, "source_not_found": 1,
                                  "unknown_scenario": 1}
    assert build.rows_loaded == 1 and build.rows_loaded + sum(build.rows_skipped.values()) == 4
    (task,) = build.tasks
    assert not task.tools and task.budget == Budget(max_tokens=50)
    assert task.metadata["bfcl_category"] == "memory_pages"
    page = chunk_page(bfcl.scenario_page_html("home"), max_tokens=40)
    assert [c.content for c in task.contexts] == [c.text for c in page.chunks]
    assert [c.id for c in task.contexts] == [f"memory-home#c{i:03d}"
                                             for i in range(len(page.chunks))]
    # gold: the chunks overlapping the source turn; the answer lies in one of them
    gold = [task.context(g) for g in task.gold_context_ids]
    assert gold and all(g.metadata["heading_path"] == "memory_prereq_1-home-1" for g in gold)
    assert any("Biscuit" in g.content for g in gold)
    assert task.verifier == VerifierSpec(kind="context_answer", params={"answers": ["biscuit"]})
    holder = next(g.id for g in gold if "Biscuit" in g.content)
    assert verify(task, execute(task, [holder], [])).success
    assert not verify(task, execute(task, [task.contexts[0].id], [])).success
    # a page within the budget is skipped: admission has nothing to choose
    roomy = bfcl.memory_pages_suite(size=None, max_tokens=1024)
    assert roomy.rows_skipped == {"page_within_budget": 3, "unknown_scenario": 1}


@cache
def _real(size: int | None = None):
    return build_suite("bfcl-memory-pages", seed=0, size=size)


@needs_data
def test_real_pages_suite_accounting_and_registry():
    build = _real()
    # pinned to bfcl-eval 2026.3.23 and the defaults (1024-token budget, 204-token chunks):
    # the notetaker page (780 tokens) fits the budget; 7 answers lie outside the gold chunks
    assert build.rows_loaded == 123 == len(build.tasks) + build.rows_held_out
    assert 0 < build.rows_held_out < 123  # the training part (the memory rows' split)
    assert SUITES["bfcl-memory-pages"].family == "bfcl-memory-pages"
    assert build.rows_skipped == {"answer_not_in_source_chunk": 7, "page_within_budget": 25}
    info = SUITES["bfcl-memory-pages"]
    assert info.pool_limit == bfcl.PAGE_POOL_LIMIT and not info.in_default_run
    for task in build.tasks[:10]:
        assert sum(c.token_cost for c in task.contexts) > 4 * task.budget.max_tokens
        assert all(c.token_cost <= bfcl.PAGE_CHUNK_TOKENS for c in task.contexts)
        # bfcl.PAGE_TOP_K whole chunks always fit the budget
        assert task.budget.max_tokens >= bfcl.PAGE_TOP_K * bfcl.PAGE_CHUNK_TOKENS


@needs_data
def test_real_pages_router_view_carries_no_answers():
    for task in _real().tasks[:20]:
        view = task.router_view()
        for c in view.contexts:
            assert set(c.metadata) == {"page_id", "heading_path", "chunk_index", "start", "end",
                                       "cut", "scenario"}
        assert not view.tools and not view.unary
        text = view.model_dump_json().lower()
        assert task.metadata["source"].lower() not in json.dumps(
            [c.metadata for c in view.contexts]).lower()
        assert "ground_truth" not in text and "gold" not in text


@needs_data
def test_real_pages_are_byte_identical_per_seed_and_chunks_are_page_slices():
    first = [t.model_dump_json() for t in build_suite("bfcl-memory-pages", 3, 3).tasks]
    second = [t.model_dump_json() for t in bfcl.memory_pages_suite(seed=3, size=3).tasks]
    assert first == second and len(first) == 3
    task = _real(2).tasks[0]
    page = chunk_page(bfcl.scenario_page_html(task.metadata["scenario"]),
                      max_tokens=bfcl.PAGE_CHUNK_TOKENS)
    for c in task.contexts:
        assert page.text[c.metadata["start"]:c.metadata["end"]] == c.content


def _page_task() -> BenchmarkTask:
    chunks = [
        ("p#c000", "Rates", "Mileage is paid at 0.50 USD per km for contractors."),
        ("p#c001", "Leave", "Annual leave is 25 days; carry-over needs approval."),
        ("p#c002", "Rates > Meals", "Meals are paid up to 30 USD per day with a receipt."),
        ("p#c003", "Travel", "Book trains two weeks ahead; first class is not paid."),
    ]
    contexts = tuple(ContextResource.from_text(cid, text, metadata={"heading_path": path})
                     for cid, path, text in chunks)
    return BenchmarkTask(task_id="page-1", suite="pages-test",
                         objective="How much is mileage paid per km?", contexts=contexts,
                         budget=Budget(max_tokens=30), gold_context_ids=("p#c000",),
                         verifier=VerifierSpec(kind="context_answer",
                                               params={"answers": ["0.50 USD"]}))


def test_bm25_top_k_admits_matching_chunks_verbatim_within_budget():
    task = _page_task()
    # costs: 14, 12, 13, 12 tokens; budget 30: the two best BM25 matches fit, a third not
    result = make_bm25_top_k_strategy(top_k=5).select(task.router_view(), None)
    sel = result.selection
    assert sel.tool_ids == () and sel.tokens_used <= 30
    assert result.extra["admitted_order"][0] == "p#c000"
    assert len(sel.context_ids) == 2
    assert any(r.startswith("budget") for r in result.extra["rejected"].values())
    # top_k caps first
    one = make_bm25_top_k_strategy(top_k=1).select(task.router_view(), None).selection
    assert one.context_ids == ("p#c000",)
    assert make_strategy("bm25_top_k").select(task.router_view(), None).selection == sel


def test_context_document_puts_the_heading_path_first():
    task = _page_task()
    assert context_document(task.contexts[2]) == (
        "Rates > Meals\n\nMeals are paid up to 30 USD per day with a receipt.")
    assert context_document(ContextResource.from_text("x", "body")) == "body"


def test_page_task_traces_chunk_recall_and_admitted_tokens():
    task = _page_task()
    (record,), _ = evaluate_batch([task], make_bm25_top_k_strategy(),
                                  UnitSpec(strategy="bm25_top_k", run_id="r", seed=0, scale=1.0,
                                           pool_limit=None))
    assert record.success and record.context_recall == 1.0
    assert record.tokens_used == record.context_tokens <= 30 and record.tool_tokens == 0


def test_judge_top_k_admits_the_pay_rate_chunks_first(judge):
    task = _page_task()
    strategy = make_judge_top_k_strategy(top_k=2, use_cache=False)
    result = strategy.select(task.router_view(), None)
    scores = result.extra["judge_scores"]
    assert set(scores) == {c.id for c in task.contexts}
    # measured with the default judge (Qwen2.5-Coder-0.5B-Instruct, q8_0): mileage +0.64,
    # meals +0.55 (tied with it: within the 0.22-logit noise floor), leave +0.27,
    # trains -1.00 logits. The two pay-rate chunks are admitted, the trains chunk is last.
    assert result.selection.context_ids == ("p#c000", "p#c002")
    assert result.extra["judge_ties"] == [["p#c000", "p#c002"]]
    assert min(scores, key=scores.get) == "p#c003"
    assert result.extra["model_hash"] == judge.model_hash


# ------------------------------------------------------------- pages in JSON Lines suites

GUIDE = (f"<html><body><p>Lead paragraph of the contractor guide, read it first.</p>"
         f"<h1>Rates</h1><p>Mileage is paid at 0.50 USD per km. {FILLER}</p>"
         f"<h2>Meals</h2><p>Meals are paid up to 30 USD per day. {FILLER}</p></body></html>")


def _suite_line(**changes) -> dict:
    task = {"task_id": "t1", "suite": "guide-pages", "objective": "mileage rate per km?",
            "contexts": [{"id": "guide", "format": "html", "content": GUIDE,
                          "source": "policy", "metadata": {"lang": "en"}},
                         {"id": "note", "content": "A plain note.", "token_cost": 3,
                          "format": "text"}],
            "budget": {"max_tokens": 40}, "gold_context_ids": ["guide#c001"],
            "verifier": {"kind": "context_answer", "params": {"answers": ["0.50 USD"]}}}
    task.update(changes)
    return task


def _load(tmp_path, task):
    from junction_datasets.jsonl import load_suite_file

    path = tmp_path / "pages.jsonl"
    path.write_text(json.dumps(task) + "\n", encoding="utf-8")
    return path, load_suite_file(path)


def test_html_context_in_a_suite_file_is_chunked_at_load(tmp_path):
    from junction.tokens import DEFAULT_TOKEN_COUNTER

    _, built = _load(tmp_path, _suite_line())
    (task,) = built.tasks
    page = chunk_page(GUIDE)
    ids = [f"guide#c{i:03d}" for i in range(len(page.chunks))]
    assert [c.id for c in task.contexts] == [*ids, "note"]
    chunks = task.contexts[:-1]
    assert [c.content for c in chunks] == [c.text for c in page.chunks]
    assert all(c.token_cost == DEFAULT_TOKEN_COUNTER.count(c.content) for c in chunks)
    assert all(c.source.value == "policy" for c in chunks)
    assert chunks[1].metadata == {"lang": "en", "page_id": "guide", "heading_path": "Rates",
                                  "chunk_index": 1, "start": page.chunks[1].start,
                                  "end": page.chunks[1].end, "cut": ""}
    assert task.contexts[-1].token_cost == 3  # a text context is as written
    (record,), _ = evaluate_batch([task], make_bm25_top_k_strategy(),
                                  UnitSpec(strategy="bm25_top_k", run_id="r", seed=0, scale=1.0,
                                           pool_limit=None))
    assert record.success and record.context_recall == 1.0


@pytest.mark.parametrize("change, message", [
    ({"gold_context_ids": ["guide"]},
     "gold_context_ids names html page 'guide'; name its chunks instead (guide#c000, "
     "guide#c001, guide#c002; 3 in all)"),
    ({"unary": {"guide": 1.0}}, "unary names html page 'guide'"),
    ({"contexts": [{"id": "guide", "format": "pdf", "content": "x"}]},
     "contexts[0].format: must be one of text, html, got 'pdf'"),
    ({"contexts": [{"id": "guide", "format": "html", "content": GUIDE, "token_cost": 9}]},
     "contexts[0]: field 'token_cost' is not allowed with format html"),
    ({"contexts": [{"id": "guide", "format": "html", "content": "<p> </p><!-- x -->"}]},
     "contexts[0]: html page 'guide' has no visible text"),
    ({"contexts": [{"id": "", "format": "html", "content": GUIDE}]},
     "contexts[0].id: an html page needs a non-empty string id, got ''"),
    ({"contexts": [{"id": "g", "format": "html", "content": 5}]},
     "contexts[0].content: an html page's content must be a string, got int"),
])
def test_bad_html_contexts_are_refused_naming_file_line_and_field(tmp_path, change, message):
    from junction.errors import DatasetError

    task = _suite_line(**change)
    if "contexts" in change:
        task["gold_context_ids"] = []
    with pytest.raises(DatasetError) as info:
        _load(tmp_path, task)
    assert str(info.value).startswith(f"{tmp_path / 'pages.jsonl'}:1: task 't1': ")
    assert message in str(info.value)


# ------------------------------------------------------------- sub-task admission


def _fake_parallel(root, monkeypatch) -> None:
    rows: list[dict[str, Any]] = [
        {"id": "pm_0", "question": [[{"role": "user", "content":
            "Find the area of a circle with radius 5. Also, get the weather forecast for "
            "Boston for the next three days."}]], "function": [{"name": "area"}]},
        {"id": "pm_1", "question": [[{"role": "user", "content":
            "Book a table for two in Rome tonight at eight. Then order a taxi."}]],
         "function": [{"name": "book"}]},
        {"id": "pm_2", "question": [[{"role": "user", "content": "Just one ask here."}]],
         "function": [{"name": "one"}]},
    ]
    answers = [{"id": r["id"], "ground_truth": [{r["function"][0]["name"]: {}}]} for r in rows]
    write_bfcl_category(root, "parallel_multiple", rows, answers)
    monkeypatch.setattr(bfcl.rows, "_data_root", lambda: root)


def test_subtask_suite_proposals_gold_and_verifier(tmp_path, monkeypatch):
    _fake_parallel(tmp_path, monkeypatch)
    build = bfcl.subtask_suite(size=None)
    assert build.rows_loaded == 2 and build.rows_skipped == {"one_sentence": 1}
    task = build.tasks[0]
    kinds = task.metadata["proposals"]
    text = {kinds[c.id]: c.content for c in task.contexts}
    # on-topic: the request's longest sentence; off-topic: another request's longest
    # sentence; echo: the request itself, verbatim
    assert text["on_topic"] == "Also, get the weather forecast for Boston for the next three days."
    assert text["off_topic"] in ("Book a table for two in Rome tonight at eight.",
                                 "Just one ask here.")  # a seeded pick among the others
    assert text["echo"] == task.objective
    assert [c.id for c in task.contexts] == ["proposal-1", "proposal-2", "proposal-3"]
    assert task.gold_context_ids == (next(i for i, k in kinds.items() if k == "on_topic"),)
    assert all(not c.metadata for c in task.router_view().contexts)
    assert "proposals" not in task.router_view().model_dump_json()
    assert task.budget.max_tokens == sum(c.token_cost for c in task.contexts)
    gold = task.gold_context_ids[0]
    assert verify(task, execute(task, [gold], [])).success
    every = verify(task, execute(task, [c.id for c in task.contexts], []))
    assert not every.success and "wrongly admitted" in every.reason
    assert verify(task, execute(task, [], [])).reason == f"wrongly admitted [], wrongly " \
                                                         f"rejected [{gold!r}]"


def test_subtask_admission_follows_the_floors(judge, tmp_path, monkeypatch):
    from junction.strategies.subtask_admission import (
        ECHO_FLOOR,
        FOLLOW_FLOOR,
        make_subtask_admission_strategy,
    )

    _fake_parallel(tmp_path, monkeypatch)
    task = bfcl.subtask_suite(size=None).tasks[0]
    result = make_subtask_admission_strategy(use_cache=False).select(task.router_view(), None)
    decisions = result.extra["subtask_decisions"]
    assert set(decisions) == {c.id for c in task.contexts}
    for _rid, d in decisions.items():  # the rule of junction.pages.admission.admit_subtasks
        expected = ("does_not_follow" if d["follows"] < FOLLOW_FLOOR else
                    "echo" if d["echo"] >= ECHO_FLOOR else "admitted")
        assert d["reason"] == expected
    assert set(result.selection.context_ids) == {r for r, d in decisions.items()
                                                 if d["reason"] == "admitted"}
    assert result.selection.tool_ids == ()


@needs_data
def test_subtask_suite_is_byte_identical_per_seed_and_seeds_differ():
    first = [t.model_dump_json() for t in build_suite("bfcl-subtasks", 3, 4).tasks]
    second = [t.model_dump_json() for t in bfcl.subtask_suite(seed=3, size=4).tasks]
    assert first == second and len(first) == 4
    other = [t.model_dump_json() for t in bfcl.subtask_suite(seed=4, size=4).tasks]
    assert other != first
    assert not SUITES["bfcl-subtasks"].in_default_run
