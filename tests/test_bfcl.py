"""BFCL suites: schema conversion, gold extraction, memory matching, no leaks, skip counts.

Real-row tests read the pinned ``bfcl-eval`` package and are skipped when it is missing
(``pip install --no-deps bfcl-eval==2026.3.23``, done by ``make setup``).
"""

from __future__ import annotations

import json
from functools import cache

import pytest
from junction_datasets import SUITES, SuiteBuild, bfcl, build_suite
from junction_datasets.bfcl import bfcl_to_json_schema, gold_function_names, match_source_turns

from junction.agent.execution import execute
from junction.errors import DatasetError
from junction.tokens import DEFAULT_TOKEN_COUNTER
from junction.verifiers import verify
from tests.helpers import BFCL_DATA, needs_data, write_bfcl_category

BFCL_SUITES = ["bfcl-multiple", "bfcl-live-multiple", "bfcl-parallel-multiple",
               "bfcl-irrelevance", "bfcl-memory"]
JSON_SCHEMA_TYPES = {"string", "integer", "number", "boolean", "array", "object", "null"}



@cache
def built(suite: str, seed: int = 0, size: int | None = 6) -> SuiteBuild:
    return build_suite(suite, seed=seed, size=size)


def by_row_id(suite: str) -> dict:
    """Every loaded row of the suite, both parts of the train / evaluation split."""
    return {t.metadata["bfcl_id"]: t for t in build_suite(suite, size=None, split="all").tasks}


@cache
def raw_rows(relative: str) -> dict[str, dict]:
    assert BFCL_DATA is not None  # the tests that read it are marked needs_data
    rows = [json.loads(line) for line in BFCL_DATA.joinpath(*relative.split("/")).read_text(
        encoding="utf-8").splitlines() if line.strip()]
    return {r["id"]: r for r in rows}


# --------------------------------------------------------------------------- schemas


@pytest.mark.parametrize("bfcl_schema, expected", [
    ({"type": "float", "description": "radius"}, {"type": "number", "description": "radius"}),
    ({"type": "tuple", "items": {"type": "float"}},
     {"type": "array", "items": {"type": "number"}}),
    ({"type": "any", "description": "anything"}, {"description": "anything"}),
    ({"type": "", "description": "untyped"}, {"description": "untyped"}),
    ({"type": "String"}, {"type": "string"}),
    ({"type": "HashMap"}, {"type": "object"}),
    ({"type": "long"}, {"type": "integer"}),
    ({"type": "ArrayList", "items": {"type": "Boolean"}},
     {"type": "array", "items": {"type": "boolean"}}),
    ({"type": "boolean", "default": True, "optional": True}, {"type": "boolean", "default": True}),
    # nested: dict of dict with an array of tuples; required and enum kept
    ({"type": "dict", "required": ["a"], "properties": {
        "a": {"type": "dict", "properties": {"b": {"type": "array", "items": {
            "type": "tuple", "items": {"type": "integer"}}}}},
        "c": {"type": "string", "enum": ["x", "y"]}}},
     {"type": "object", "required": ["a"], "properties": {
         "a": {"type": "object", "properties": {"b": {"type": "array", "items": {
             "type": "array", "items": {"type": "integer"}}}}},
         "c": {"type": "string", "enum": ["x", "y"]}}}),
])
def test_schema_conversion(bfcl_schema, expected):
    assert bfcl_to_json_schema(bfcl_schema) == expected


@pytest.mark.parametrize("bfcl_schema, message", [
    ({"type": "dict", "properties": {"x": {"type": "complex"}}},
     "parameters.properties.x.type: unsupported BFCL type 'complex'"),
    ({"type": "dict", "properties": {"x": {"type": "array", "items": {"type": 3}}}},
     "parameters.properties.x.items.type: unsupported BFCL type 3"),
    ([], "parameters: schema must be an object, got list"),
])
def test_schema_conversion_errors(bfcl_schema, message):
    with pytest.raises(DatasetError) as info:
        bfcl_to_json_schema(bfcl_schema)
    assert str(info.value) == message


def _types(schema: dict):
    if "type" in schema:
        yield schema["type"]
    for sub in schema.get("properties", {}).values():
        yield from _types(sub)
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            yield from _types(schema[key])


@needs_data
def test_real_row_schema_is_standard_and_priced_after_conversion():
    # multiple_5 lists weather.get_by_coordinates_date, whose coordinates are a BFCL tuple
    # of floats; the task's tool must carry the JSON Schema form.
    task = by_row_id("bfcl-multiple")["multiple_5"]
    tool = task.tool("weather.get_by_coordinates_date")
    assert tool.json_schema["type"] == "object"
    assert tool.json_schema["properties"]["coordinates"]["type"] == "array"
    assert tool.json_schema["properties"]["coordinates"]["items"] == {"type": "number"}
    rendered = tool.rendered_schema()
    assert '"type":"tuple"' not in rendered and '"type":"dict"' not in rendered
    assert tool.token_cost == DEFAULT_TOKEN_COUNTER.count(rendered)  # priced as converted
    for suite in BFCL_SUITES:
        for t in built(suite).tasks:
            for tool in t.tools:
                assert set(_types(tool.json_schema)) <= JSON_SCHEMA_TYPES, (suite, tool.id)


# --------------------------------------------------------------------------- gold


@pytest.mark.parametrize("ground_truth, names", [
    ([{"f": {"x": [1]}}], ("f",)),
    # parallel calls of one function name it once; order of first call kept
    ([{"g": {"x": [1]}}, {"f": {}}, {"g": {"x": [2]}}], ("g", "f")),
    ([{"a.b": {}}, {"a.b": {}}], ("a.b",)),
])
def test_gold_function_names(ground_truth, names):
    assert gold_function_names(ground_truth) == names


@pytest.mark.parametrize("ground_truth", [[], None, [{"f": {}, "g": {}}], ["f"]])
def test_gold_function_names_rejects_other_shapes(ground_truth):
    with pytest.raises(DatasetError):
        gold_function_names(ground_truth)


@needs_data
@pytest.mark.parametrize("row_id, gold, calls", [
    ("parallel_multiple_0", ("math_toolkit.sum_of_multiples", "math_toolkit.product_of_primes"), 2),
    ("parallel_multiple_3", ("get_rectangle_property",), 2),   # same function called twice
    ("parallel_multiple_7", ("kinematics.calculate_time",), 2),
])
def test_real_gold_extraction(row_id, gold, calls):
    task = by_row_id("bfcl-parallel-multiple")[row_id]
    assert task.gold_tool_ids == gold
    assert task.metadata["gold_call_count"] == calls
    answer = raw_rows("possible_answer/BFCL_v4_parallel_multiple.json")[row_id]
    assert task.metadata["gold_calls"] == answer["ground_truth"]
    # exposing exactly the gold tools verifies; dropping one does not
    assert verify(task, execute(task, [], gold)).success
    assert not verify(task, execute(task, [], gold[1:])).success


@needs_data
def test_tool_pool_holds_row_functions_and_distractors():
    build = built("bfcl-multiple")
    rows = raw_rows("BFCL_v4_multiple.json")
    for task in build.tasks:
        ids = [t.id for t in task.tools]
        assert ids == sorted(ids)  # order by id: position does not mark the row's functions
        assert len(ids) == bfcl.DEFAULT_POOL_SIZE
        own = {f["name"] for f in rows[task.metadata["bfcl_id"]]["function"]}
        assert own <= set(ids)
        assert task.budget.max_tokens == bfcl.DEFAULT_MAX_TOKENS
        assert sum(t.token_cost for t in task.tools) > task.budget.max_tokens
        assert not task.unary and not task.interactions


# --------------------------------------------------------------------------- memory

TURNS = [
    "Hi! My name is Michael, and this is my first time here.",
    "I'm 35 years old, live in Seattle, and work as a designer.",
    "Monday: Team meeting ran long. Need to finalize the budget report before Friday.",
    "On weekends my roommates and I will drive out to a state park or a beach town.",
]


@pytest.mark.parametrize("source, hits, rule", [
    ("My name is Michael, and this is my first time...", [0], "exact"),
    ("...I’m 35 years old, live in Seattle...", [1], "exact"),           # curly quote
    ('"I\'m 35 years old... work as a designer."', [1], "exact"),         # two fragments
    ("Monday: Need to finalize the budget report before Friday.", [2], "clauses"),
    # paraphrase: 10 of its 11 word bigrams occur in turn 3 (all but 'we will')
    ("we will drive out to a state park or a beach town", [3], "fuzzy"),
    ("I live in Portland and love hiking.", [], "none"),
])
def test_match_source_turns(source, hits, rule):
    assert match_source_turns(source, TURNS) == (hits, rule)


@needs_data
@pytest.mark.parametrize("row_id, gold, excerpt, rule", [
    ("memory_0-customer-0", "memory_prereq_0-customer-0-turn-00", "my name is michael", "exact"),
    # source "...I occasionally like a strawberry matcha latte...": leading ellipsis
    ("memory_3-customer-3", "memory_prereq_1-customer-1-turn-01", "strawberry matcha", "exact"),
    # source "Monday: Need to finalize Q1 budget report before Friday." joins label + sentence
    ("memory_132-notetaker-2", "memory_prereq_32-notetaker-0-turn-00", "finalize q1", "clauses"),
    # source paraphrases the turn ("we'll drive out" for "my roommates and I will drive out")
    ("memory_109-student-29", None, "smaller getaways", "fuzzy"),
])
def test_real_memory_gold_contexts(row_id, gold, excerpt, rule):
    task = by_row_id("bfcl-memory")[row_id]
    assert task.metadata["source_match"] == rule
    assert len(task.gold_context_ids) == 1
    if gold is not None:
        assert task.gold_context_ids == (gold,)
    assert excerpt in task.context(task.gold_context_ids[0]).content.lower()
    assert all(c.source.value == "memory" for c in task.contexts)
    assert {"core_memory_retrieve", "archival_memory_key_search"} <= {t.id for t in task.tools}
    # the gold turn alone verifies; no context does not
    assert verify(task, execute(task, task.gold_context_ids, [])).success
    assert not verify(task, execute(task, [], [])).success


# --------------------------------------------------------------------------- no leaks


def _strings(value) -> list[str]:
    """Every string in a JSON-like value, keys included."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (_strings(k) + _strings(v))]
    if isinstance(value, (list, tuple)):
        return [s for item in value for s in _strings(item)]
    return []


def _source_text(task) -> str:
    """Everything the question side of the data holds for this task (no answer file)."""
    parts = [task.objective, *(c.content for c in task.contexts),
             *(t.rendered_schema() for t in task.tools)]
    if task.metadata["bfcl_category"] != "memory":
        rows = raw_rows(f"BFCL_v4_{task.metadata['bfcl_category']}.json")
        parts.append(json.dumps(rows[task.metadata["bfcl_id"]], ensure_ascii=False))
    return "\n".join(parts).lower()


def assert_view_has_no_answers(task) -> None:
    """The view holds no answer-file value that the question side does not already hold."""
    view = task.router_view()
    assert not view.unary and not view.interactions
    for resource in (*view.contexts, *view.tools):
        assert set(resource.metadata) <= {"source", "scenario", "conversation", "turn", "topic"}
    text = "\n".join(_strings(view.model_dump(mode="json"))).lower()
    if task.verifier.kind == "context_answer":
        answer = [*task.verifier.params["answers"], task.metadata["source"]]
    else:
        answer = task.metadata.get("gold_calls", [])
    source = _source_text(task)
    for value in _strings(answer):
        if len(value) >= 3 and value.lower() not in source:
            assert value.lower() not in text, (task.task_id, value)
    if answer:
        assert json.dumps(answer, ensure_ascii=False).lower() not in text


@needs_data
@pytest.mark.parametrize("suite", BFCL_SUITES)
def test_router_view_carries_no_answers(suite):
    for task in built(suite).tasks:
        assert_view_has_no_answers(task)


@needs_data
def test_leak_check_can_fail():
    # gold calls pasted into a tool description, and an answer put in context metadata
    task = built("bfcl-parallel-multiple").tasks[0]
    tool = task.tools[0].model_copy(update={
        "description": json.dumps(task.metadata["gold_calls"], ensure_ascii=False)})
    with pytest.raises(AssertionError):
        assert_view_has_no_answers(task.model_copy(update={"tools": (tool, *task.tools[1:])}))
    memory = built("bfcl-memory").tasks[0]
    context = memory.contexts[0].model_copy(update={"metadata": {"answer": "x"}})
    with pytest.raises(AssertionError):
        assert_view_has_no_answers(
            memory.model_copy(update={"contexts": (context, *memory.contexts[1:])}))


# --------------------------------------------------------------------------- accounting


def _fn(name, ptype="string"):
    return {"name": name, "description": f"{name} tool",
            "parameters": {"type": "dict", "properties": {"x": {"type": ptype}}}}


def _q(text="hello"):
    return [[{"role": "user", "content": text}]]


def test_skipped_rows_counted_per_reason(tmp_path, monkeypatch):
    rows = [
        {"id": "ok_0", "question": _q(), "function": [_fn("f"), _fn("g", "float")]},
        "{not json",                                                    # malformed_json
        {"question": _q(), "function": [_fn("f")]},                       # missing_id
        {"id": "ok_0", "question": _q(), "function": [_fn("f")]},         # duplicate_id
        {"id": "mt", "question": [_q()[0], _q()[0]], "function": [_fn("f")]},  # multi_turn
        {"id": "sys", "question": [[{"role": "system", "content": "x"}]],
         "function": [_fn("f")]},                                        # no_user_message
        {"id": "nofn", "question": _q()},                                 # no_function_field
        {"id": "type", "question": _q(), "function": [_fn("f", "complex")]},  # unsupported
        {"id": "dup", "question": _q(), "function": [_fn("f"), _fn("f")]},  # duplicate name
        {"id": "noans", "question": _q(), "function": [_fn("f")]},         # no_answer
        {"id": "badans", "question": _q(), "function": [_fn("f")]},        # malformed_answer
        {"id": "unlisted", "question": _q(), "function": [_fn("f")]},      # not listed
    ]
    answers = [
        {"id": "ok_0", "ground_truth": [{"g": {"x": [1.0]}}, {"g": {"x": [2.0]}}]},
        {"id": "badans", "ground_truth": []},
        {"id": "unlisted", "ground_truth": [{"h": {}}]},
    ]
    write_bfcl_category(tmp_path, "fake", rows, answers)
    monkeypatch.setattr(bfcl.rows, "_data_root", lambda: tmp_path)
    category = bfcl.load_category("fake")
    assert [r.id for r in category.rows] == ["ok_0"]
    assert category.rows[0].gold_names == ("g",)
    assert category.skipped == {
        "duplicate_function_name": 1, "duplicate_id": 1, "gold_function_not_listed": 1,
        "malformed_answer": 1, "malformed_json": 1, "missing_id": 1, "multi_turn": 1,
        "no_answer": 1, "no_function_field": 1, "no_user_message": 1,
        "unsupported_param_type": 1,
    }
    build = bfcl.tool_suite("fake", "fake-suite", size=None, split="all")
    assert build.rows_loaded == 1 and build.rows_skipped == category.skipped
    assert build.tasks[0].gold_tool_ids == ("g",)
    # the gold schema alone over the budget: counted, not dropped silently
    tight = bfcl.tool_suite("fake", "fake-suite", size=None, max_tokens=5, split="all")
    assert tight.rows_loaded == 0 and tight.rows_skipped["gold_over_budget"] == 1


def test_memory_skips_counted_per_reason(tmp_path, monkeypatch):
    conversation = {"id": "memory_prereq_0-home-0", "topic": "Moving", "question": [
        [{"role": "user", "content": "Hi there, I just moved."}],
        [{"role": "user", "content": "My cat is called Biscuit and she is 4."}],
    ]}
    (tmp_path / "memory_prereq_conversation").mkdir()
    (tmp_path / "memory_prereq_conversation" / "memory_home.json").write_text(
        json.dumps(conversation), encoding="utf-8")
    (tmp_path / "multi_turn_func_doc").mkdir()
    for api, names in (("memory_kv", ["core_memory_retrieve"]), ("math_api", ["add", "mul"])):
        (tmp_path / "multi_turn_func_doc" / f"{api}.json").write_text(
            "\n".join(json.dumps(_fn(n)) for n in names), encoding="utf-8")
    questions = [
        {"id": "m_ok", "question": _q("What is my cat called?"), "scenario": "home"},
        {"id": "m_where", "question": _q("Where?"), "scenario": "garden"},   # unknown_scenario
        {"id": "m_nosrc", "question": _q("Dog?"), "scenario": "home"},       # source_not_found
        {"id": "m_noans", "question": _q("Age?"), "scenario": "home"},       # answer not in turn
        {"id": "m_bad", "question": _q("Bad?"), "scenario": "home"},         # malformed_answer
    ]
    answers = [
        {"id": "m_ok", "ground_truth": ["biscuit"], "source": "...called Biscuit..."},
        {"id": "m_where", "ground_truth": ["x"], "source": "x"},
        {"id": "m_nosrc", "ground_truth": ["Rex"], "source": "My dog is Rex."},
        {"id": "m_noans", "ground_truth": ["four"], "source": "she is 4"},
        {"id": "m_bad", "ground_truth": "Biscuit", "source": "Biscuit"},
    ]
    write_bfcl_category(tmp_path, "memory", questions, answers)
    monkeypatch.setattr(bfcl.rows, "_data_root", lambda: tmp_path)
    build = bfcl.memory_suite(size=None, pool_size=2, split="all")
    assert build.rows_loaded == 1
    assert build.rows_skipped == {"answer_not_in_source_turn": 1, "malformed_answer": 1,
                                  "source_not_found": 1, "unknown_scenario": 1}
    (task,) = build.tasks
    assert [c.id for c in task.contexts] == ["memory_prereq_0-home-0-turn-00",
                                             "memory_prereq_0-home-0-turn-01"]
    assert task.gold_context_ids == ("memory_prereq_0-home-0-turn-01",)
    # the memory API is always in; one seeded distractor fills the pool of 2
    assert len(task.tools) == 2 and "core_memory_retrieve" in {t.id for t in task.tools}
    assert task.verifier.params == {"answers": ["biscuit"]}


@needs_data
@pytest.mark.parametrize("suite, rows, loaded, skipped", [
    # pinned to bfcl-eval 2026.3.23 and the defaults (1024 tokens, pools of 16 / 20)
    ("bfcl-multiple", 200, 200, {}),
    # every gold set fits 1024 tokens at the default counter's prices (it priced English
    # at about 1.6x the judge model's tokenizer before; tests/test_tokens.py)
    ("bfcl-live-multiple", 1053, 1053, {}),
    ("bfcl-parallel-multiple", 200, 200, {}),
    ("bfcl-irrelevance", 240, 240, {}),
    ("bfcl-memory", 155, 144, {"answer_not_in_source_turn": 11}),
])
def test_full_suite_accounting(suite, rows, loaded, skipped):
    build = built(suite, size=None)
    assert build.rows_loaded == loaded == len(build.tasks) + build.rows_held_out
    assert 0 < build.rows_held_out < loaded  # the training part
    assert build.rows_skipped == skipped
    assert build.rows_loaded + sum(build.rows_skipped.values()) == rows
    assert f"{rows} rows, {loaded} loaded" in build.note


@needs_data
def test_generic_loader_reads_other_categories():
    assert len(bfcl.load_category("simple_python").rows) == 400
    # a pretty-printed JSON file is not JSON Lines: every line counted, none loaded
    sensitivity = bfcl.load_category("format_sensitivity")
    assert not sensitivity.rows and set(sensitivity.skipped) == {"malformed_json"}
    assert bfcl.load_category("multi_turn_base", require_functions=False).skipped["multi_turn"] > 0


def test_missing_category_names_the_file():
    if BFCL_DATA is None:
        pytest.skip("bfcl-eval is not installed")
    with pytest.raises(DatasetError, match=r"BFCL_v4_nope.json"):
        bfcl.load_category("nope")


# --------------------------------------------------------------------------- determinism


@needs_data
@pytest.mark.parametrize("suite", BFCL_SUITES)
def test_same_seed_gives_byte_identical_tasks(suite):
    first = [t.model_dump_json() for t in build_suite(suite, seed=3, size=4).tasks]
    built.cache_clear()
    second = [t.model_dump_json() for t in build_suite(suite, seed=3, size=4).tasks]
    assert first == second and len(first) == 4


@needs_data
def test_seed_changes_sample_and_distractors_and_size_is_prefix_stable():
    a = build_suite("bfcl-multiple", seed=0, size=5).tasks
    b = build_suite("bfcl-multiple", seed=1, size=5).tasks
    assert [t.task_id for t in a] != [t.task_id for t in b]
    six = {t.task_id for t in build_suite("bfcl-multiple", seed=0, size=6).tasks}
    assert {t.task_id for t in a} <= six
    full_0 = {t.task_id: t for t in bfcl.multiple_suite(seed=0, size=None).tasks}
    full_1 = {t.task_id: t for t in bfcl.multiple_suite(seed=1, size=None).tasks}
    assert any(full_0[k].tools != full_1[k].tools for k in full_0)
    assert all(full_0[k].gold_tool_ids == full_1[k].gold_tool_ids for k in full_0)


def test_registry_entries():
    for name in BFCL_SUITES:
        info = SUITES[name]
        assert info.pool_limit == bfcl.POOL_LIMIT == 8
        assert info.default_size == 40  # the default benchmark's size per BFCL suite
