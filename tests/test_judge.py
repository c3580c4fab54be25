"""The judge on the embedded model: smoke gates, batch vs naive, truncation, strategy."""

from __future__ import annotations

import dataclasses

import pytest

from junction.judge import RETRIEVAL_INSTRUCTION, SmokeFixture, SmokeTestError, run_smoke
from junction.judge.noise import noise_floor
from junction.judge.templates import FEW_SHOT, QWEN3_RERANKER

pytestmark = pytest.mark.model

_FIXTURE = RETRIEVAL_INSTRUCTION.fixture
assert isinstance(_FIXTURE, SmokeFixture)  # the retrieval instruction has its smoke fixture
FIXTURE: SmokeFixture = _FIXTURE
DOCS = [
    FIXTURE.matching,
    FIXTURE.non_matching,
    "Berlin is the capital of Germany.",
    "Tool get_capital: returns the capital city of a country.",
    "The Seine flows through Paris, the French capital.",
]


def test_smoke_gates_pass_and_report_measured_values(judge) -> None:
    report = run_smoke(judge)
    assert report.passed
    assert [g.name for g in report.gates] == [
        "single_token_answers", "tokenisation_boundaries", "fixture_gap"]
    gap = report.gates[2].measured
    assert gap["gap"] == pytest.approx(gap["matching"] - gap["non_matching"], abs=1e-3)
    assert gap["gap"] > FIXTURE.min_gap
    assert len(report.model_hash) == 64 and len(report.instruction_hash) == 64


def test_swapped_yes_no_fails_the_gap_gate(judge) -> None:
    swapped = judge.with_template(dataclasses.replace(FEW_SHOT, yes=FEW_SHOT.no, no=FEW_SHOT.yes))
    with pytest.raises(SmokeTestError, match="smoke gate 'fixture_gap' failed") as info:
        run_smoke(swapped)
    assert info.value.measured["gap"] < 0  # the answer's log-odds flip sign


def test_broken_template_fails_the_boundary_gate(judge) -> None:
    # the space moved from the query text into the literal: "Query: " + "What..." tokenises
    # as [..., ":", " "] + ["What"], the whole prompt as [..., ":", " What"].
    broken = judge.with_template(dataclasses.replace(FEW_SHOT, query_before="Query: ", lead=""))
    with pytest.raises(SmokeTestError, match="smoke gate 'tokenisation_boundaries' failed") as info:
        run_smoke(broken)
    assert info.value.gate == "tokenisation_boundaries"
    assert "first_mismatch" in info.value.measured
    report = run_smoke(broken, raise_on_failure=False)
    assert [g.name for g in report.gates] == ["single_token_answers", "tokenisation_boundaries"]


def test_multi_token_answer_fails_the_first_gate(judge) -> None:
    wordy = judge.with_template(dataclasses.replace(FEW_SHOT, yes=" yes indeed"))
    with pytest.raises(SmokeTestError, match="smoke gate 'single_token_answers' failed"):
        run_smoke(wordy)


def test_batch_matches_naive_within_the_noise_floor(judge) -> None:
    # all five in one batch; the naive path (each whole prompt decoded from an empty cache,
    # seconds a document) on the matching and the non-matching passage
    batch = judge.score(FIXTURE.query, DOCS).scores
    naive = judge.score_naive(FIXTURE.query, DOCS[:2]).scores
    floor = noise_floor(judge).floor
    assert max(abs(a - b) for a, b in zip(batch, naive, strict=False)) <= floor
    # the matching passage still beats the non-matching one on both paths
    assert batch[0] > batch[1] and naive[0] > naive[1]


def test_same_inputs_give_the_same_scores(judge) -> None:
    assert judge.score(FIXTURE.query, DOCS).scores == judge.score(FIXTURE.query, DOCS).scores


def test_a_prefix_decoded_before_is_restored_with_the_same_scores(judge, monkeypatch) -> None:
    # alternating instructions, as subtask_admission does (follows, echo, follows): the
    # third call restores the follows prefix's saved state instead of decoding it (no
    # decode starts at position 0), and scores bit for bit as the decode did. Two
    # documents: the prefixes (about 170 tokens each) are what is saved and restored
    from junction.judge.instructions import ECHO_INSTRUCTION, FOLLOWS_INSTRUCTION

    docs = DOCS[:2]
    first = judge.score(FIXTURE.query, docs, FOLLOWS_INSTRUCTION).scores
    echo = judge.score(FIXTURE.query, docs, ECHO_INSTRUCTION).scores
    starts: list[int] = []
    decode = judge._decode_sequence

    def recorded(tokens, start, *args, **kwargs):
        starts.append(start)
        return decode(tokens, start, *args, **kwargs)

    monkeypatch.setattr(judge, "_decode_sequence", recorded)
    again = judge.score(FIXTURE.query, docs, FOLLOWS_INSTRUCTION).scores
    assert 0 not in starts and starts  # the query was decoded, the prefix restored
    assert again == first and echo != first
    # after the naive path cleared the whole cache, the echo prefix is restored as well
    judge.score_naive(FIXTURE.query, docs[:1], FOLLOWS_INSTRUCTION)
    assert judge.score(FIXTURE.query, docs, ECHO_INSTRUCTION).scores == echo


def test_long_document_is_cut_in_the_document_only(judge) -> None:
    long_doc = "word " * 500
    tokens, n_text = judge.document_tokens(long_doc)
    suffix = judge.tokenize(judge.template.doc_after, special=True)
    assert tokens[-len(suffix):] == suffix  # the answer suffix always stays
    batch = judge.score(FIXTURE.query, [long_doc, FIXTURE.matching])
    assert [(t.part, t.index, t.original_tokens, t.kept_tokens) for t in batch.truncations] == [
        ("document", 0, n_text, judge.config.max_document_tokens)]


def test_more_candidates_than_slots_are_grouped(judge) -> None:
    docs = DOCS * 4  # 20 candidates > 14 slots: two llama_decode groups
    scores = judge.score(FIXTURE.query, docs).scores
    first = judge.score(FIXTURE.query, DOCS).scores
    floor = noise_floor(judge).floor
    for i, s in enumerate(scores):
        assert abs(s - first[i % len(DOCS)]) <= floor


def test_cli_smoke_prints_each_gate(judge) -> None:
    import json

    from typer.testing import CliRunner

    from flows.cli_judge import judge_app

    result = CliRunner().invoke(judge_app, ["smoke", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert payload["passed"] and payload["model_hash"] == judge.model_hash
    assert [g["name"] for g in payload["gates"]] == [
        "single_token_answers", "tokenisation_boundaries", "fixture_gap"]
    assert payload["gates"][2]["measured"]["gap"] > payload["gates"][2]["measured"]["min_gap"]


# ------------------------------------------------ the judge's replayed bug reports

CHINA = "What is the capital of China?"
CITIES = ["The capital of China is Beijing.", "The capital of China is Shanghai.",
          "The capital of China is Nanjing."]


@pytest.fixture(scope="module")
def gemma_vocab():
    """Gemma 3 270M's tokenizer only (``vocab_only``: no weights, no context)."""
    from junction.judge import JudgeConfig
    from junction.judge.scorer import load_judge

    return load_judge(JudgeConfig(embedded="gemma3-270m", vocab_only=True))


def test_the_boundary_gate_passes_for_the_default_gemma_and_a_qwen3_chat_layout(
        judge, gemma_vocab) -> None:
    # Qwen's tokenizer merges "?\n" (and ".\n") into one token: the user text is now
    # tokenised together with the plain head of the literal after it
    assert "?\n" in [judge.piece(t) for t in judge.tokenize(CHINA + "\n")]
    for candidate in (judge, judge.with_template(QWEN3_RERANKER), gemma_vocab):
        gates = {g.name: g for g in run_smoke(candidate, raise_on_failure=False).gates}
        assert gates["tokenisation_boundaries"].passed, gates["tokenisation_boundaries"].measured
    broken = dataclasses.replace(FEW_SHOT, query_before="Query: ", lead="")
    for candidate in (judge, gemma_vocab):
        gate = run_smoke(candidate.with_template(broken), raise_on_failure=False).gates[1]
        assert not gate.passed and "first_mismatch" in gate.measured


def test_a_vocab_only_judge_refuses_to_score(gemma_vocab) -> None:
    from junction.judge import JudgeError

    with pytest.raises(JudgeError, match="vocab_only"):
        gemma_vocab.score(CHINA, CITIES)


def test_capital_of_china_ranks_beijing_first(judge) -> None:
    # the batch path, which every strategy uses; the one-pair-at-a-time path against it is
    # test_batch_matches_naive_within_the_noise_floor's
    batch = judge.score(CHINA, CITIES).scores
    assert batch.index(max(batch)) == 0


def test_empty_and_whitespace_documents_are_skipped_not_scored(judge) -> None:
    docs = ["", CITIES[0], "   \n\t ", "Photosynthesis converts light energy in plants."]
    batch = judge.score(CHINA, docs)
    assert batch.statuses == ["empty", "scored", "empty", "scored"]
    assert batch.scores[0] is None and batch.scores[2] is None
    alone = judge.score(CHINA, [docs[1], docs[3]]).scores
    assert [batch.scores[1], batch.scores[3]] == alone  # the rest is judged as without them


def test_documents_the_judge_cannot_tell_apart_are_degenerate(judge) -> None:
    from junction.judge.cache import judge_documents

    head = "word " * (judge.config.max_document_tokens + 10)
    docs = [head + tail for tail in ("alpha", "beta", "gamma", "delta")]  # cut to one text
    batch = judge_documents(judge, None, CHINA, docs, noise_floor=noise_floor(judge).floor)
    assert len(set(batch.scores)) == 1 and batch.degenerate
    assert set(batch.truncations) == {0, 1, 2, 3}
    honest = judge_documents(judge, None, CHINA, [*CITIES, docs[0]],
                             noise_floor=noise_floor(judge).floor)
    assert not honest.degenerate


def test_runtime_settings_are_in_the_provenance_and_the_cache_key(judge) -> None:
    from junction.judge import JudgeConfig
    from junction.judge.scorer import load_judge

    prov = judge.provenance()
    for key in ("model_hash", "template", "instruction_hash", "kv_type", "n_seq",
                "swa_full", "llama_cpp_version"):
        assert key in prov, key
    keys = {judge.runtime_key()}
    base = judge.config.model_dump()
    for change in ({"kv_type": "f16"}, {"n_seq": 8}, {"swa_full": False}):
        other = load_judge(JudgeConfig(**{**base, **change, "vocab_only": True}))
        keys.add(other.runtime_key())
    assert len(keys) == 4
