"""The hand-written negation/modality pair set of bench/studies/judge_quality.py is well
formed, and the bench's AUC and tool renderings behave as documented (no model needed)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("judge_quality",
                                               ROOT / "bench" / "studies" / "judge_quality.py")
assert _spec is not None and _spec.loader is not None
judge_quality = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("judge_quality", judge_quality)
_spec.loader.exec_module(judge_quality)


def test_pair_set_is_well_formed():
    pairs, provenance = judge_quality.load_pairs(judge_quality.PAIRS_FILE)
    assert provenance
    assert len(pairs) >= 30
    assert len({p["id"] for p in pairs}) == len(pairs)
    kinds = {p["kind"] for p in pairs}
    assert {"negation", "modality", "counterfactual", "tense", "cancelled"} <= kinds
    for p in pairs:
        assert p["query"].strip() and p["support"].strip() and p["refute"].strip()
        assert p["support"] != p["refute"]


def test_auc_counts_ties_half():
    assert judge_quality.auc([1, 2, 3, 3], [True, False, True, False]) == 0.375
    assert judge_quality.auc([0.5, 0.5], [True, False]) == 0.5
    assert judge_quality.auc([1.0], [True]) is None


def test_params_summary_lists_required_first():
    schema = {"name": "f", "parameters": {"properties": {"a": {}, "b": {}, "c": {}},
                                          "required": ["c"]}}
    assert judge_quality._params_summary(schema) == "c (required), a, b"
    assert judge_quality._params_summary({}) == "none"
