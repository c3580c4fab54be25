"""Text in any script: the lexical tokenizer, the BM25 lanes on CJK/Thai text, score-0
candidates, and the default token counter against the judge model's own tokenizer."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from junction_datasets import build_suite, get_suite
from junction_datasets.toy import coupling_task

from junction.candidates import LexicalToolCandidateGenerator, bm25_scores
from junction.evaluate import evaluate_batch
from junction.resources import ToolResource
from junction.strategies import candidate_pools
from junction.strategies.exact import make_exact_strategy
from junction.text import lexical_tokens
from junction.tokens import DEFAULT_TOKEN_COUNTER
from junction.units import UnitSpec


@pytest.mark.parametrize("text, tokens", [
    # Latin: lower-cased, English stopwords dropped (bm25s's list)
    ("Pay the contractor, a 1099 worker", ["pay", "contractor", "1099", "worker"]),
    # Han: one token per character, one-character tokens kept; Latin runs stay words
    ("基于'feature-branch'的workspace吗？",
     ["基", "于", "feature", "branch", "的", "workspace", "吗"]),
    ("天气", ["天", "气"]),
    ("ひらがなカタカナ", ["ひ", "ら", "が", "な", "カ", "タ", "カ", "ナ"]),
    ("거실 에어컨", ["거", "실", "에", "어", "컨"]),
    # Thai: one character with its combining vowel/tone marks (ช่ = ช + ่)
    ("ช่วย", ["ช่", "ว", "ย"]),
    # NFKC: full-width Latin becomes ASCII
    ("ＡＢＣ ｐ４", ["abc", "p4"]),
    ("the of and a", []),
    # one-character tokens are kept: a language, a plot's axes
    ("plot x y in R", ["plot", "x", "y", "r"]),
])
def test_lexical_tokens(text: str, tokens: list[str]) -> None:
    assert lexical_tokens(text) == tokens


def test_one_shared_han_character_scores_above_zero() -> None:
    # before: "北京天气" was one token and never matched "天气预报"
    scores = bm25_scores("北京后天的天气如何", ["天气预报服务", "股票价格查询"])
    assert scores[0] > 0 and scores[1] == 0


def test_score_zero_candidates_rank_after_matches_and_are_marked() -> None:
    tools = [ToolResource.from_schema(i, d, {"type": "object", "properties": {}})
             for i, d in (("a_tool", "unrelated words"), ("b_tool", "weather forecast"),
                          ("c_tool", "weather"))]
    ranked = LexicalToolCandidateGenerator().generate("weather forecast", tools)
    assert [(c.resource_id, c.matched) for c in ranked] == [
        ("b_tool", True), ("c_tool", True), ("a_tool", False)]
    stop = LexicalToolCandidateGenerator().generate("the of and", tools)
    assert [c.matched for c in stop] == [False, False, False]


def test_lane_metrics_never_credit_a_score_zero_candidate() -> None:
    # a stopword-only objective: every candidate scores 0, so the lanes retrieved
    # nothing, whatever the pools' id order puts first (before: recall@5 1.0, MRR 0.33)
    task = coupling_task().model_copy(update={"objective": "the of and to"})
    records, _ = evaluate_batch([task], make_exact_strategy(), UnitSpec(
        strategy="exact", run_id="r", seed=0, scale=1.0, pool_limit=None))
    rec = records[0]
    assert all(c.score == 0 for c in (*rec.context_candidates, *rec.tool_candidates))
    for name in ("context_lane_recall_at_5", "context_lane_mrr", "tool_lane_recall_at_5",
                 "tool_lane_mrr", "tool_lane_ndcg_at_5"):
        assert getattr(rec, name) == 0.0, name


# bfcl-live-multiple rows whose objective is in Chinese or Korean (found by scanning
# the suite's 1053 tasks for Han/kana/Hangul/Thai; no row there is in Thai):
# before, "我可以创建一个名为'DevelopmentEnv'的workspace" was one token and every tool
# scored 0. Rows left out, and why: 16-4-8 and 21-4-13 (Korean with no term the gold
# tool's text shares), 186-81-0, 196-88-0, 197-89-0 (Chinese only; the tools' text is
# English, so no lexical lane can match them).
MATCHED_ROWS = ["live_multiple_6-3-1", "live_multiple_7-3-2", "live_multiple_14-4-6",
                "live_multiple_19-4-11", "live_multiple_20-4-12", "live_multiple_22-4-14"]


@pytest.fixture(scope="module")
def live_multiple_rows():
    # every row, both parts of the train / evaluation split: the rows above are named by id
    tasks = build_suite("bfcl-live-multiple", seed=0, size=None, split="all").tasks
    return {t.task_id.removeprefix("bfcl-live-multiple-"): t for t in tasks}


@pytest.mark.parametrize("row", MATCHED_ROWS)
def test_cjk_rows_get_lexical_scores_and_exact_exposes_their_gold_tool(
        row: str, live_multiple_rows) -> None:
    task = live_multiple_rows[row]
    limit = get_suite("bfcl-live-multiple").pool_limit
    view = task.router_view()
    scores = {c.resource_id: c.score for c in candidate_pools(view, limit).tools}
    assert all(scores.get(g, 0) > 0 for g in task.gold_tool_ids)
    exposed = make_exact_strategy().select(view, limit).selection.tool_ids
    assert set(task.gold_tool_ids) <= set(exposed)


# ------------------------------------------- the counter against the judge's tokenizer

# Hand-written Chinese (no Chinese corpus ships with the project); the BFCL samples
# below are the suites' own English descriptions and rendered JSON schemas.
_CHINESE = [
    "我想在系统中创建一个新的工作空间，基于仓库的主分支。工作空间的名字叫做开发者中心。",
    "北京后天的天气如何？请告诉我最高气温和最低气温，以及是否会下雨。",
    "根据公司的报销政策，承包商不能使用员工的报销流程提交费用，必须通过采购部门的供应商付款系统。",
    "这个函数用于查询指定城市在给定日期的天气预报，返回温度、湿度和风速等信息。",
    "请帮我预订明天下午三点从上海到杭州的高铁票，二等座，两张。",
    "用户的问题如果含糊不清，请先询问澄清，不要对函数参数的值做任何假设。",
]


def _samples() -> dict[str, list[str]]:
    tools: dict[str, ToolResource] = {}
    for suite in ("bfcl-live-multiple", "bfcl-multiple", "bfcl-parallel-multiple"):
        for task in build_suite(suite, seed=0, size=60).tasks:
            tools.update({t.id: t for t in task.tools})
    chosen = [tools[k] for k in sorted(tools)][:150]
    return {"english": [t.description for t in chosen],
            "json_schema": [t.rendered_schema() for t in chosen],
            "chinese": _CHINESE}


@pytest.mark.model
@pytest.mark.parametrize("kind", ["english", "json_schema", "chinese"])
def test_default_counter_is_within_25_percent_of_the_judge_tokenizer(kind: str,
                                                                      judge) -> None:
    # measured: Qwen2.5-Coder (the default judge) english 1.11, json_schema 1.15, chinese
    # 1.12; Gemma 3 270M english 1.11, json_schema 1.07, chinese 1.07
    texts = _samples()[kind]
    real = sum(len(judge.tokenize(t)) for t in texts)
    ours = sum(DEFAULT_TOKEN_COUNTER.count(t) for t in texts)
    assert 0.75 <= ours / real <= 1.25, (kind, ours, real)


@pytest.mark.model
def test_default_counter_prices_han_near_the_judge_tokenizer_per_character(judge) -> None:
    # Qwen2.5 and Gemma 3 spend about 0.6 tokens per Han character (0.60, 0.63); the old rule
    # (ceil(run / 4)) charged 0.25 and so 0.44-0.64x of the real count
    chars = sum(len(t) for t in _CHINESE)
    real = sum(len(judge.tokenize(t)) for t in _CHINESE)
    ours = sum(DEFAULT_TOKEN_COUNTER.count(t) for t in _CHINESE)
    assert 0.5 <= real / chars <= 0.75
    assert abs(ours - real) / real <= 0.25


@pytest.mark.model
def test_default_counter_holds_every_script_within_25_percent(default_tokenizer) -> None:
    # the fixed sample of bench/studies/token_prices.py (docs/measurement.md, "Token prices",
    # has its ratios); a single rate for every script counted Greek at 0.23, Arabic at
    # 0.48 and Cyrillic at 0.56 of the real count
    import json
    from pathlib import Path

    sample = json.loads((Path(__file__).resolve().parent.parent / "bench" / "data"
                         / "token_scripts.json").read_text(encoding="utf-8"))
    scripts = {k: v for k, v in sample.items() if not k.startswith("_")}
    assert sorted(scripts) == ["arabic", "cjk", "cyrillic", "devanagari", "greek", "hebrew",
                               "latin", "thai"]
    ratios = {}
    for script, texts in scripts.items():
        real = sum(len(default_tokenizer(t)) for t in texts)
        ratios[script] = sum(DEFAULT_TOKEN_COUNTER.count(t) for t in texts) / real
    assert all(0.75 <= r <= 1.25 for r in ratios.values()), ratios
    assert DEFAULT_TOKEN_COUNTER.name == "approx-qwen2.5"


def test_bm25_scores_from_the_kept_index_equal_a_fresh_index():
    """The index of a corpus is kept for the process; scores from it equal those of an
    index built afresh (bm25s itself), whichever corpora came between."""
    import bm25s

    from junction.candidates import _BM25_INDEXES

    def fresh(query, documents):
        retriever = bm25s.BM25()
        retriever.index([lexical_tokens(d) for d in documents], show_progress=False)
        terms = [t for t in lexical_tokens(query) if t in retriever.vocab_dict]
        return [round(float(s), 6) for s in retriever.get_scores(terms)] if terms else \
            [0.0] * len(documents)

    a = ["open a savings account", "close the account", "report a lost card today"]
    b = ["card limits and fees", "lost card", "account"]
    queries = ["lost card", "open account", "fees", "nothing matches"]
    _BM25_INDEXES.clear()
    for corpus in (a, b, a, b):
        for q in queries:
            assert bm25_scores(q, corpus) == fresh(q, corpus)
    assert len(_BM25_INDEXES) == 2
    # one changed character is another corpus
    changed = [a[0] + "s", *a[1:]]
    assert bm25_scores("open account", changed) == fresh("open account", changed)
    assert len(_BM25_INDEXES) == 3
    assert bm25_scores("x", ["", " "]) == [0.0, 0.0]


HELD_OUT_SENTENCE = (0.4, 1.5)
"""Counted / real tokens of any one held-out sentence (``junction.tokens``' stated bound)."""
HELD_OUT_SCRIPT_TOTAL = (0.7, 1.3)
"""Counted / real tokens of a held-out language's sentences together, for languages written
in a script the counter prices apart (not Latin)."""


@pytest.mark.model
def test_default_counter_holds_its_stated_bound_on_sentences_it_was_not_fitted_on(
        default_tokenizer) -> None:
    # bench/data/token_heldout.json: 17 languages, none of its sentences in the sample the
    # rates were fitted on. Before, the docstring's 25% was all it stated, and single
    # Ukrainian sentences came out 26-34% under (measured here: 0.67-0.84)
    import json
    from pathlib import Path

    from junction.tokens import SCRIPT_RANGES

    root = Path(__file__).resolve().parent.parent / "bench" / "data"
    held = {k: v for k, v in json.loads((root / "token_heldout.json").read_text(
        encoding="utf-8")).items() if not k.startswith("_")}
    fitted = {t for k, v in json.loads((root / "token_scripts.json").read_text(
        encoding="utf-8")).items() if not k.startswith("_") for t in v}
    assert not fitted & {t for v in held.values() for t in v}
    assert len(held) >= 15 and "ukrainian" in held
    apart = re.compile("[" + "".join(SCRIPT_RANGES.values()) + "]")
    low, high = HELD_OUT_SENTENCE
    out_of_bound = {}
    for language, texts in held.items():
        real = [len(default_tokenizer(t)) for t in texts]
        counted = [DEFAULT_TOKEN_COUNTER.count(t) for t in texts]
        out_of_bound.update({t: c / r for t, c, r in zip(texts, counted, real, strict=False)
                             if not low <= c / r <= high})
        if all(apart.search(t) for t in texts):  # a script priced apart
            total = sum(counted) / sum(real)
            assert HELD_OUT_SCRIPT_TOTAL[0] <= total <= HELD_OUT_SCRIPT_TOTAL[1], \
                (language, total)
    assert not out_of_bound, out_of_bound


def test_bm25_named_widens_the_context_pool_by_documents_naming_a_pooled_tool():
    """``bm25_named``: the BM25 top-k contexts, then every other context that names a
    pooled tool's id as a whole identifier, in BM25 order, ranked again from 0; a
    document naming a tool outside the tool pool, or naming it inside a longer
    identifier, is not added; the tool lane is BM25's."""
    from junction.candidates import check_pool_rule
    from junction.resources import ContextResource
    from junction.tasks import RouterView

    def doc(i, text):
        return ContextResource(id=f"d{i}", content=text, token_cost=5)

    def tool(name, text):
        return ToolResource(id=name, description=text, schema_token_cost=5)

    view = RouterView(
        task_id="t", suite="s", objective="open a savings account",
        contexts=(doc(0, "open a savings account today"), doc(1, "savings account rates"),
                  doc(2, "call open_account_4821 for this"),
                  doc(3, "fees apply; see close_account_9"),
                  doc(4, "open_account_48210 is another id"),
                  doc(5, "nothing relevant here")),
        tools=(tool("open_account_4821", "open an account"),
               tool("close_account_9", "close something unrelated zz")))
    assert check_pool_rule("bm25_named") == "bm25_named"
    plain = candidate_pools(view, (2, 1), "bm25")
    named = candidate_pools(view, (2, 1), "bm25_named")
    assert [c.resource_id for c in plain.contexts] == ["d0", "d1"]
    assert named.tools == plain.tools == candidate_pools(view, (None, 1), "bm25").tools
    assert [c.resource_id for c in plain.tools] == ["open_account_4821"]
    assert [c.resource_id for c in named.contexts] == ["d0", "d1", "d2"]
    assert [c.rank for c in named.contexts] == [0, 1, 2]
    whole = {c.resource_id: c.score for c in candidate_pools(view, None, "bm25").contexts}
    assert all(c.score == whole[c.resource_id] for c in named.contexts)
    both = candidate_pools(view, (2, None), "bm25_named")
    assert {c.resource_id for c in both.contexts} == {"d0", "d1", "d2", "d3"}
    assert candidate_pools(view, None, "bm25_named") == candidate_pools(view, None, "bm25")


_SCRIPT_SAMPLE = "abcXYZ019 .,:{}\"'\n\tпривет مرحبا שלום 你好 สวัสดี नमस्ते αβγ"


@given(st.text(alphabet=_SCRIPT_SAMPLE, max_size=120) | st.text(max_size=60))
@settings(max_examples=300, deadline=None)
def test_the_counter_is_ceil_of_rate_times_length_per_run_and_its_cache_changes_nothing(
        text: str) -> None:
    """The integer ceiling and the per-process cache give the module docstring's rule:
    Σ ceil(rate · characters) over the runs, with the rates as exact fractions."""
    import math

    from junction import tokens

    rule = sum(math.ceil(len(m.group()) * tokens._RATES[str(m.lastgroup)])
               for m in tokens._RUN.finditer(text))
    tokens._COUNTED.pop(text, None)
    assert DEFAULT_TOKEN_COUNTER.count(text) == rule  # counted
    assert DEFAULT_TOKEN_COUNTER.count(text) == rule  # from the cache
