"""The persistent score cache, with a fake judge (no model needed)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from types import SimpleNamespace

from junction.judge.cache import ScoreCache, cached_scores, score_key
from junction.judge.model import JudgeConfig


@dataclass
class FakeJudge:
    """Scores a document by its length; records every batch it was asked to score."""

    model_hash: str = "m" * 64
    config: JudgeConfig = field(default_factory=JudgeConfig)
    calls: list = field(default_factory=list)

    def instruction_hash(self, instruction=None) -> str:
        return "i" * 64

    def runtime_key(self) -> str:
        return self.config.model_dump_json()

    def document_tokens(self, document):
        return [], len(document)

    def score(self, query, documents, instruction=None):
        self.calls.append(list(documents))

        return SimpleNamespace(scores=[float(len(d)) for d in documents])


def test_rerun_scores_only_misses(tmp_path) -> None:
    cache = ScoreCache(tmp_path / "scores.sqlite")
    judge = FakeJudge()
    assert cached_scores(judge, cache, "q", ["aa", "b"]) == [2.0, 1.0]
    assert cached_scores(judge, cache, "q", ["b", "ccc", "aa"]) == [1.0, 3.0, 2.0]
    assert judge.calls == [["aa", "b"], ["ccc"]]  # only the miss is scored the second time
    assert len(cache) == 3
    # a second process (a second connection to the same file) sees the scores
    other = ScoreCache(tmp_path / "scores.sqlite")
    assert cached_scores(FakeJudge(), other, "q", ["ccc"]) == [3.0]
    mode = sqlite3.connect(tmp_path / "scores.sqlite").execute("PRAGMA journal_mode").fetchone()
    assert mode == ("wal",)


def test_key_changes_with_each_field() -> None:
    base = score_key("m", "i", "q", "d", "q8_0")
    assert len({base, score_key("M", "i", "q", "d", "q8_0"), score_key("m", "I", "q", "d", "q8_0"),
                score_key("m", "i", "Q", "d", "q8_0"), score_key("m", "i", "q", "D", "q8_0"),
                score_key("m", "i", "q", "d", "f16")}) == 6
    # fields cannot bleed into each other: ("ab", "c") != ("a", "bc")
    assert score_key("m", "i", "ab", "c") != score_key("m", "i", "a", "bc")


def test_kv_type_is_part_of_the_key(tmp_path) -> None:
    cache = ScoreCache(tmp_path / "scores.sqlite")
    cached_scores(FakeJudge(), cache, "q", ["x"])
    other = FakeJudge(config=JudgeConfig(kv_type="f16"))
    cached_scores(other, cache, "q", ["x"])
    assert other.calls == [["x"]]


def test_no_cache_scores_directly() -> None:
    judge = FakeJudge()
    assert cached_scores(judge, None, "q", ["abc"]) == [3.0]
    assert judge.calls == [["abc"]]
