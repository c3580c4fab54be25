"""The agent outcome: BFCL's checker adapter on real rows, the prompt, the cache, the model.

Checker tests grade hand-written answers (as the model would write them) on real BFCL
rows through BFCL's own decoder and checker; model tests (marked) run the embedded model
on one row.
"""

from __future__ import annotations

import ast
import importlib.util
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from junction_datasets.bfcl import (
    irrelevance_suite,
    memory_suite,
    multiple_suite,
    parallel_multiple_suite,
)

from junction.agent import bfcl_checker
from junction.agent.execution import ExecutionResult, ToolCall
from junction.agent.generations import EMBEDDED_GENERATIONS, AgentCache, Generation
from junction.agent.grade import AgentGrade, Measure
from junction.agent.graders import AGENT_GRADERS, GraderInfo
from junction.agent.grading import AGENT_OUTCOMES, bfcl_doc, grade_bfcl
from junction.agent.llm import LLMExecutor
from junction.agent.prompt import parse_output, render_prompt
from junction.evaluate import evaluate_batch
from junction.evidence.traces import records_to_table
from junction.strategies import make_strategy
from junction.units import UnitSpec


def _task(build, bfcl_id):
    return next(t for t in build.tasks if t.metadata["bfcl_id"] == bfcl_id)


@pytest.fixture(scope="module")
def multiple_123():
    # gold: calculate_probability(total_outcomes=[52], favorable_outcomes=[4], round_to=['', 2])
    return _task(multiple_suite(size=None), "multiple_123")


@pytest.fixture(scope="module")
def irrelevant():
    return irrelevance_suite(size=1).tasks[0]


def _result(task, text):
    """What ``LLMExecutor`` makes of ``text`` (the model's answer) on the whole pool."""
    tools = tuple(t.id for t in task.tools)
    kind, calls, error = parse_output(text, tools)
    return ExecutionResult(
        context_ids=(), tool_ids=tools, text=text, output_kind=kind, decode_error=error,
        tool_calls=tuple(ToolCall(index=i, tool_id=name, arguments=args)
                         for i, call in enumerate(calls) for name, args in call.items()))


# --------------------------------------------------------------------------- checker


def test_checker_imports_are_the_ones_the_adapter_stands_in_for():
    # if a new bfcl-eval imports more (or other) modules, the stand-in must be re-checked
    spec = importlib.util.find_spec("bfcl_eval")
    root = Path(next(iter(spec.submodule_search_locations)))
    tree = ast.parse((root / "eval_checker/ast_eval/ast_checker.py").read_text())
    imported = [n.module if isinstance(n, ast.ImportFrom) else n.names[0].name
                for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert tuple(imported) == bfcl_checker.CHECKER_IMPORTS
    utils = ast.parse((root / "model_handler/utils.py").read_text())
    defined = {n.name for n in utils.body if isinstance(n, ast.FunctionDef)}
    assert set(bfcl_checker.DECODER_FUNCTIONS) <= defined


@pytest.mark.parametrize(("text", "success", "outcome", "error_type"), [
    ("[calculate_probability(total_outcomes=52, favorable_outcomes=4)]", True, "correct", ""),
    # optional round_to given one of its accepted values
    ("[calculate_probability(total_outcomes=52, favorable_outcomes=4, round_to=2)]",
     True, "correct", ""),
    ("```\n[calculate_probability(total_outcomes=52, favorable_outcomes=4)]\n```",
     True, "correct", ""),
    ("[calculate_probability(total_outcomes=52, favorable_outcomes=5)]", False,
     "wrong_args", "value_error:others"),
    ('[calculate_probability(total_outcomes="52", favorable_outcomes=4)]', False,
     "wrong_args", "type_error:simple"),
    ("[calc_probability(total_outcomes=52, favorable_outcomes=4)]", False, "wrong_call",
     "simple_function_checker:wrong_func_name"),
    ("[calculate_probability(total_outcomes=52, favorable_outcomes=4), "
     "calculate_probability(total_outcomes=52, favorable_outcomes=4)]", False, "wrong_count",
     "multiple_function_checker:wrong_count"),
    ("[calculate_probability(total_outcomes=52,", False, "unparseable", "decoder:unparseable"),
    # BFCL's decoder strips backticks only: a ```python fence is call syntax it cannot parse
    ("```python\n[calculate_probability(total_outcomes=52, favorable_outcomes=4)]\n```",
     False, "unparseable", "decoder:unparseable"),
    ("The probability is 4/52.", False, "answered", "agent:no_call"),
    ("[]", False, "abstained", "agent:no_call"),
])
def test_bfcl_checker_grades_a_multiple_row(multiple_123, text, success, outcome, error_type):
    grade = grade_bfcl(multiple_123, _result(multiple_123, text))
    assert (grade.success, grade.outcome, grade.error_type) == (success, outcome, error_type)
    assert grade.outcome in AGENT_OUTCOMES


@pytest.mark.parametrize(("text", "success", "outcome"), [
    ("None of the functions can answer this.", True, "answered"),
    ("[]", True, "abstained"),
    ("[architecture_capacity.evaluate_capacity(x=1)]", False, "wrong_call"),
    # BFCL's own irrelevance scorer would count this decode error as a pass
    ("[architecture_capacity.evaluate_capacity(x=1", False, "unparseable"),
])
def test_irrelevance_passes_only_without_a_call(irrelevant, text, success, outcome):
    grade = grade_bfcl(irrelevant, _result(irrelevant, text))
    assert (grade.success, grade.outcome) == (success, outcome)


def test_parallel_multiple_accepts_the_gold_calls_in_any_order():
    task = parallel_multiple_suite(size=1).tasks[0]
    gold = task.metadata["gold_calls"]
    calls = []
    for call in reversed(gold):
        (name, params), = call.items()
        args = ", ".join(f"{k}={v[0]!r}" for k, v in params.items() if v[0] != "")
        calls.append(f"{name}({args})")
    assert grade_bfcl(task, _result(task, "[" + ", ".join(calls) + "]")).outcome == "correct"
    wrong = "[" + ", ".join(calls[:-1]) + "]"
    assert grade_bfcl(task, _result(task, wrong)).outcome == "wrong_count"


def test_memory_passes_when_the_answer_holds_an_accepted_answer():
    task = memory_suite(size=1).tasks[0]
    answer = task.verifier.params["answers"][0]
    assert grade_bfcl(task, _result(task, f"It was {answer}.")).outcome == "correct"
    grade = grade_bfcl(task, _result(task, "I do not remember."))
    assert (grade.success, grade.outcome, grade.error_type) == (
        False, "wrong_answer", "agentic:answer_not_found")


def test_decoder_refuses_expressions_bfcl_would_eval():
    with pytest.raises(bfcl_checker.DecodeError, match="refused"):
        bfcl_checker.decode_calls('[f(a=1 + __import__("os").getpid())]')
    assert bfcl_checker.decode_calls("[f(a=1 + 2)]") == [{"f": {"a": 3}}]


def test_bfcl_doc_restores_bfcl_type_names(multiple_123):
    doc = bfcl_doc(multiple_123.tool("calculate_probability"))
    types = {k: v["type"] for k, v in doc["parameters"]["properties"].items()}
    assert doc["parameters"]["type"] == "dict"
    assert types == {"total_outcomes": "integer", "favorable_outcomes": "integer",
                     "round_to": "integer"}


# --------------------------------------------------------------------------- prompt


_GOLD_SECRET = "gold-secret-7f3a"


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_prompt_depends_on_the_router_view_only(multiple_123, data):
    task = multiple_123
    tools = data.draw(st.sets(st.sampled_from([t.id for t in task.tools]), max_size=5))
    prompt = render_prompt(task.router_view(), (), tools)
    # the same view with other gold, verifier and metadata renders the same prompt
    other = task.model_copy(update={
        "metadata": {"gold_calls": _GOLD_SECRET, "listed_tool_ids": [_GOLD_SECRET]},
        "gold_tool_ids": (), "verifier": task.verifier.model_copy(
            update={"params": {"answers": [_GOLD_SECRET]}})})
    assert render_prompt(other.router_view(), (), tools) == prompt
    text = "".join(m["content"] for m in prompt.messages)
    assert _GOLD_SECRET not in text
    for name in tools:
        assert f'"name": "{name}"' in text
    for name in {t.id for t in task.tools} - tools:
        assert f'"name": "{name}"' not in text


def test_render_prompt_takes_a_router_view_not_a_task(multiple_123):
    with pytest.raises(TypeError, match="RouterView"):
        render_prompt(multiple_123, (), ())


def test_memory_prompt_renders_exposed_contexts_as_documents():
    task = memory_suite(size=1).tasks[0]
    ids = [c.id for c in task.contexts[:2]]
    text = render_prompt(task.router_view(), ids, ())
    system = text.messages[0]["content"]
    assert all(f"[document {i}]" in system for i in ids)
    assert f"[document {task.contexts[2].id}]" not in system
    assert text.messages[1] == {"role": "user", "content": task.objective}


# --------------------------------------------------------------------------- cache


def test_cache_round_trips_a_generation_byte_for_byte(tmp_path):
    cache = AgentCache(tmp_path / "agent.sqlite")
    key = EMBEDDED_GENERATIONS.key("m" * 64, "p" * 64, "{}")
    assert cache.get(key) is None
    text = "[f(a='ü\\n')]\n  trailing space "
    cache.put(key, "m" * 64, "p" * 64, "{}", Generation(text, 12, 7))
    again = AgentCache(tmp_path / "agent.sqlite").get(key)
    assert (again.text, again.prompt_tokens, again.generated_tokens, again.cached) == (
        text, 12, 7, True)
    assert len(cache) == 1
    with sqlite3.connect(tmp_path / "agent.sqlite") as db:
        assert db.execute("select count(*) from agent_generations").fetchone() == (1,)


def test_both_executors_share_one_cache_class_and_keep_their_keys(tmp_path):
    # the keys are those the two former cache classes computed, so existing caches still
    # hit: sha256 of the NUL-joined fields, the remote one prefixed with "remote"
    import hashlib

    from junction.agent.remote import REMOTE_GENERATIONS, RemoteGenerationCache

    fields = ("m" * 64, "p" * 64, "{}")
    assert EMBEDDED_GENERATIONS.key(*fields) == hashlib.sha256(
        "\0".join(fields).encode()).hexdigest()
    assert REMOTE_GENERATIONS.key(*fields) == hashlib.sha256(
        "\0".join(("remote", *fields)).encode()).hexdigest()
    embedded = AgentCache(tmp_path / "agent.sqlite")
    remote = RemoteGenerationCache(tmp_path / "agent.sqlite")
    embedded.put(EMBEDDED_GENERATIONS.key(*fields), *fields, Generation("local", 3, 1))
    remote.put(REMOTE_GENERATIONS.key(*fields), *fields, Generation("server", 4, 2))
    assert embedded.get(EMBEDDED_GENERATIONS.key(*fields)).text == "local"
    assert remote.get(REMOTE_GENERATIONS.key(*fields)).text == "server"
    assert embedded.get(REMOTE_GENERATIONS.key(*fields)) is None  # a table each
    with sqlite3.connect(tmp_path / "agent.sqlite") as db:
        columns = [r[1] for r in db.execute("pragma table_info(remote_generations)")]
    assert columns[1] == "model_id"


# --------------------------------------------------------------------------- model


@pytest.mark.model
def test_llm_executor_acts_and_a_cache_hit_is_byte_identical(agent_model, multiple_123,
                                                             tmp_path):
    executor = LLMExecutor(agent_model, AgentCache(tmp_path / "agent.sqlite"))
    listed = make_strategy("bfcl_listed")

    def run():
        records, timings = evaluate_batch([multiple_123], listed, UnitSpec(
            strategy="bfcl_listed", run_id="r", seed=0, scale=1.0, pool_limit=8,
            agent_task_ids=(multiple_123.task_id,)), executor)
        return records, timings

    first, t1 = run()
    second, t2 = run()
    (record,) = first
    assert record.executor == "llm" and record.agent_outcome in AGENT_OUTCOMES
    assert record.agent_prompt_tokens > 0 and record.agent_generated_tokens > 0
    assert record.agent_model_sha256 == agent_model.model_sha256
    assert record.agent_prompt_sha256 == render_prompt(
        multiple_123.router_view(), (), record.exposed_tool_ids).sha256
    assert (t1[0]["agent_cached"], t2[0]["agent_cached"]) == (False, True)
    assert records_to_table(first).equals(records_to_table(second))
    assert [r.model_dump_json() for r in first] == [r.model_dump_json() for r in second]
    assert (record.agent_grader, record.agent_measures) == ("bfcl", ())

    # a grader owns its decoder and its measures: the same cached answer, read and graded
    # by a throwaway grader that is the catalog's only one for the run
    decoded = []

    def no_calls(text, tool_ids):
        decoded.append(tuple(tool_ids))
        return "text", [], ""

    length = GraderInfo(
        "answer_length", ("tools_exposed",), lambda task: True,
        lambda task, result: AgentGrade(success=False, outcome="answered",
                                        measures={"answer_chars": float(len(result.text))}),
        {"answered": "any answer"}, decode=no_calls,
        measures=(Measure("answer_chars", "characters in the answer", "characters, >= 0",
                          "neither"),))
    kept = dict(AGENT_GRADERS)
    AGENT_GRADERS.clear()
    AGENT_GRADERS.register(length.name, length)
    try:
        (third,), t3 = run()
    finally:
        AGENT_GRADERS.clear()
        AGENT_GRADERS.update(kept)
    assert t3[0]["agent_cached"] and decoded == [record.exposed_tool_ids]
    assert (third.agent_grader, third.agent_outcome, third.tool_calls) == (
        "answer_length", "answered", ())
    assert [(m.name, m.value) for m in third.agent_measures] == [
        ("answer_chars", float(len(record.agent_output)))]


# --------------------------------------------------------------------------- references


def test_references_expose_the_listing_or_the_pool_outside_the_budget(multiple_123):
    listed = make_strategy("bfcl_listed")
    everything = make_strategy("all_tools")
    (a,), _ = evaluate_batch([multiple_123], listed, UnitSpec(strategy="bfcl_listed", run_id="r",
                                                              seed=0, scale=1.0, pool_limit=8))
    (b,), _ = evaluate_batch([multiple_123], everything, UnitSpec(strategy="all_tools", run_id="r",
                                                                  seed=0, scale=1.0, pool_limit=8))
    assert a.exposed_tool_ids == tuple(sorted(multiple_123.metadata["listed_tool_ids"]))
    assert b.exposed_tool_ids == tuple(sorted(t.id for t in multiple_123.tools))
    assert b.tokens_used > multiple_123.budget.max_tokens  # the pool does not fit
    assert (a.selection_status, a.executor, a.agent_success, a.agent_outcome) == (
        "reference", "toy", None, None)
    with pytest.raises(Exception, match="reference strategy"):
        listed.select(multiple_123.router_view(), 8)


def test_bfcl_listed_refuses_a_task_without_a_listing():
    from junction_datasets import build_suite

    task = build_suite("synthetic", seed=0, size=1).tasks[0]
    with pytest.raises(Exception, match="listed_tool_ids"):
        make_strategy("bfcl_listed").select(task, 8)


# --------------------------------------------------------------------------- memory reference


@pytest.fixture(scope="module")
def memory_task():
    return memory_suite(size=1).tasks[0]


def test_bfcl_listed_on_memory_exposes_the_whole_prior_conversation(memory_task):
    (record,), _ = evaluate_batch([memory_task], make_strategy("bfcl_listed"),
                                  UnitSpec(strategy="bfcl_listed", run_id="r", seed=0, scale=1.0,
                                           pool_limit=8))
    assert record.exposed_context_ids == tuple(sorted(c.id for c in memory_task.contexts))
    assert record.exposed_tool_ids == tuple(sorted(memory_task.metadata["listed_tool_ids"]))
    assert record.context_tokens == sum(c.token_cost for c in memory_task.contexts)
    assert record.tokens_used > memory_task.budget.max_tokens  # outside the budget
    assert record.success  # the answer's turn is in the conversation


def _chars(prompt):
    """A stand-in tokenizer for the fitting rule: one token per 4 characters."""
    return sum(len(m["content"]) for m in prompt.messages) // 4


def _oracle_kept(view, ids, tools, limit):
    """The most recent contexts that fit with the question reserve, by linear scan."""
    from junction.agent.prompt import QUESTION_RESERVE

    ordered = [c.id for c in view.contexts if c.id in set(ids)]
    for kept in range(len(ordered), -1, -1):
        p = render_prompt(view, ordered[len(ordered) - kept:], tools,
                          left_out=len(ordered) - kept, question="")
        if _chars(p) + QUESTION_RESERVE <= limit:
            return ordered[len(ordered) - kept:]
    return []


@pytest.mark.parametrize("limit", [3500, 5000, 8000])
def test_fit_prompt_keeps_the_most_recent_contexts_that_fit(memory_task, limit):
    from junction.agent.prompt import LEFT_OUT_NOTE, fit_prompt

    view = memory_task.router_view()
    ids = [c.id for c in memory_task.contexts]
    tools = memory_task.metadata["listed_tool_ids"]
    assert _chars(render_prompt(view, ids, tools)) > 8000  # the whole conversation does not fit
    prompt, dropped = fit_prompt(view, ids, tools, _chars, limit)
    kept = _oracle_kept(view, ids, tools, limit)
    assert 0 < len(kept) < len(ids)
    assert list(dropped) == ids[:len(ids) - len(kept)]  # oldest first
    assert _chars(prompt) <= limit
    system = prompt.messages[0]["content"]
    assert LEFT_OUT_NOTE.format(n=len(dropped)) in system
    assert all(f"[document {c}]\n" in system for c in kept)
    assert not any(f"[document {c}]\n" in system for c in dropped)
    assert prompt.messages[1] == {"role": "user", "content": memory_task.objective}


def test_fit_prompt_leaves_a_fitting_prompt_unchanged_and_shares_the_system_message(
        memory_task):
    from junction.agent.prompt import fit_prompt

    view = memory_task.router_view()
    ids = [c.id for c in memory_task.contexts[:3]]
    prompt, dropped = fit_prompt(view, ids, (), _chars, 10_000)
    assert (prompt, dropped) == (render_prompt(view, ids, ()), ())
    # two questions under the reserve, the same exposed set: the same system message
    every = [c.id for c in memory_task.contexts]
    short = view.model_copy(update={"objective": "Where do I live?"})
    longer = view.model_copy(update={"objective": "Where do I live? " * 20})
    a, _ = fit_prompt(short, every, (), _chars, 3000)
    b, _ = fit_prompt(longer, every, (), _chars, 3000)
    assert a.messages[0] == b.messages[0] and a.messages[1] != b.messages[1]


def test_fit_prompt_refuses_when_the_tools_alone_exceed_the_limit(memory_task):
    from junction.agent.prompt import AgentError, fit_prompt

    view = memory_task.router_view()
    tools = memory_task.metadata["listed_tool_ids"]
    with pytest.raises(AgentError, match="every context left out"):
        fit_prompt(view, [c.id for c in memory_task.contexts], tools, _chars, 100)


@pytest.mark.model
def test_agent_on_the_memory_reference_fits_its_window_and_the_trace_says_what_it_left_out(
        tmp_path):
    from junction.agent.llm import AgentConfig
    from tests.helpers import NOTETAKER_WINDOW, embedded_agent, notetaker_one_tool

    # notetaker's 24 turns with one tool of the memory API (about 1,750 tokens) in a
    # 768-token window: the fitted prompt keeps the most recent turns that fit
    agent = embedded_agent(AgentConfig(n_ctx=NOTETAKER_WINDOW, max_tokens=16))
    task = notetaker_one_tool()
    executor = LLMExecutor(agent, AgentCache(tmp_path / "agent.sqlite"))
    (record,), _ = evaluate_batch([task], make_strategy("bfcl_listed"), UnitSpec(
        strategy="bfcl_listed", run_id="r", seed=0, scale=1.0, pool_limit=8,
        agent_task_ids=(task.task_id,)), executor)
    dropped = record.agent_dropped_context_ids
    assert 0 < len(dropped) < len(task.contexts)
    assert list(dropped) == [c.id for c in task.contexts[:len(dropped)]]
    assert record.agent_outcome in AGENT_OUTCOMES
    # the count the fit used is the count llama.cpp reported for the generation
    assert record.agent_prompt_tokens <= agent.prompt_limit
    kept = [c.id for c in task.contexts[len(dropped):]]
    fitted = render_prompt(task.router_view(), kept, record.exposed_tool_ids,
                           left_out=len(dropped))
    assert fitted.sha256 == record.agent_prompt_sha256
    assert agent.count_prompt_tokens(fitted) == record.agent_prompt_tokens
    assert records_to_table([record]).column("agent_dropped_context_ids").to_pylist() == [
        list(dropped)]


@pytest.mark.model
def test_agent_reuses_a_shared_prefix_in_whole_batches_only(agent_model, multiple_123):
    # A and B share the system prompt (six tools of the pool: ~1,300 tokens, two whole
    # 512-token blocks and part of a third; the whole pool, ~3,000 tokens, only made A's
    # evaluation longer) and differ in the question: after A (evaluated into the third
    # block, which B shares in part), only the shared whole 512-token blocks may stay in
    # the KV cache
    from llama_cpp import Llama

    view = multiple_123.router_view()
    tools = [t.id for t in multiple_123.tools][:6]
    a = render_prompt(view, (), tools)
    b = render_prompt(view.model_copy(update={"objective": "What is 2 + 2?"}), (), tools)
    ids_a, ids_b = agent_model.prompt_token_ids(a), agent_model.prompt_token_ids(b)
    common = Llama.longest_token_prefix(ids_a, ids_b)
    llm = agent_model._llm
    # two whole blocks shared, and a part block that must not be kept
    assert common > 2 * llm.n_batch and common % llm.n_batch
    assert agent_model.count_prompt_tokens(a) == len(ids_a)
    llm.reset()
    llm.eval(ids_a[:2 * llm.n_batch + 1])  # A's first two whole blocks and one token more
    agent_model._keep_aligned_prefix(ids_b)
    assert llm.n_tokens == common // llm.n_batch * llm.n_batch
    agent_model._keep_aligned_prefix(ids_b[:1024])  # the whole prompt cached: last block again
    assert llm.n_tokens == 512
    agent_model._keep_aligned_prefix(ids_b[:100])
    assert llm.n_tokens == 0
