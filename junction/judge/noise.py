"""The judge's noise floor: score differences below it mean nothing.

Two sources of noise in a logit gap (logits), both measured on a fixed probe
(``PROBE_GROUPS``):

- ``slot_spread``: one passage scored in every candidate slot of one batch, max - min
  (the KV cache's quantisation and the batch layout move a score with its slot);
- ``batch_naive_gap``: the largest |batch path - one-pair-at-a-time path| over the groups
  (``LlamaJudge.score`` against ``LlamaJudge.score_naive``).

``floor = max(slot_spread, batch_naive_gap)`` rounded up to 0.01 logit, the rule
``bench/perf/judge_throughput.py`` used for the Gemma table (``NOISE_FLOOR_LOGITS``). A floor
depends on the model file, the KV cache type and the batch settings, so a measurement is
stored under ``state_dir()/judge/noise/`` keyed by ``LlamaJudge.runtime_key()``;
``noise_floor(judge)`` returns the stored one, else the shipped measurement for the model's
sha256 and KV type (``SHIPPED_NOISE_FLOORS``), else measures and stores it
(``junction judge noise`` measures on demand).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from junction.environment import state_dir
from junction.judge.errors import JudgeError
from junction.judge.scorer import NOISE_FLOOR_LOGITS

__all__ = [
    "PROBE_DOCUMENTS",
    "PROBE_GROUPS",
    "PROBE_QUERY",
    "SHIPPED_NOISE_FLOORS",
    "NoiseFloor",
    "measure_noise_floor",
    "noise_floor",
    "stored_noise_floor",
]

PROBE_QUERY = "Which document explains how to renew a passport?"
PROBE_DOCUMENTS = (
    "To renew a passport, fill in form DS-82, attach a recent photo and mail your old passport.",
    "Passport renewals can also be done online if your previous passport was issued after 2010.",
    "The passport office is closed on public holidays and reopens the next working day.",
    "Tool renew_passport: submits a passport renewal application for a citizen.",
    "Tool get_weather: returns the weather forecast for a city on a date.",
    "Photosynthesis converts light energy into chemical energy in plants.",
    "A driving licence must be renewed every ten years at a licensing office.",
    "The museum's new wing displays paintings from the Dutch golden age.",
    "Visa applications require an interview at the consulate and two photos.",
    "Tool book_flight: books a flight between two airports on a given date.",
    "Passports lost abroad are replaced by the nearest embassy within five days.",
    "The recipe calls for two cups of flour, one egg and a pinch of salt.",
)
"""The fixed probe: passages and tools, relevant and not, 12-25 tokens each."""

PROBE_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (PROBE_QUERY, PROBE_DOCUMENTS),
    ("What is the capital of France?", (
        "Paris is the capital and most populous city of France.",
        "Photosynthesis converts light energy into chemical energy in plants.",
        "Berlin is the capital of Germany.",
        "Tool get_capital: returns the capital city of a country.",
        "The Seine flows through Paris, the French capital.",
    )),
    ("Did the safety inspection of the bridge take place?", (
        "The safety inspection of the bridge took place on 18 March.",
        "The safety inspection of the bridge was scheduled for 18 March but cancelled.",
        "Tool schedule_inspection: books a safety inspection for a structure on a date.",
    )),
)
"""Every (query, documents) group the batch-vs-one-pair gap is measured on: the probe, the
retrieval smoke fixture's topic (a short-passage set on which Gemma and Qwen both showed
their largest gaps) and a negation pair."""

SHIPPED_NOISE_FLOORS: dict[tuple[str, str], float] = {
    # Qwen2.5-Coder-0.5B-Instruct Q4_K_M (the default), measured by `junction judge noise`
    # with the judge_admission strategy's config (2 threads, n_seq 16): slot spread 0.066,
    # batch vs one pair 0.213 (on the France group)
    ("1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32", "q8_0"): 0.22,
    # Gemma 3 270M: bench/perf/judge_throughput.py's table, kept in one place
    **{("a5fd3b62230a", kv): floor for kv, floor in NOISE_FLOOR_LOGITS.items()},
}
"""Measured floors (logits) by (model sha256 or its 12-character prefix, KV type)."""


@dataclass(frozen=True)
class NoiseFloor:
    """A measured noise floor (logits) and its parts; ``runtime_key`` names the settings."""

    floor: float
    slot_spread: float | None
    batch_naive_gap: float | None
    n_documents: int
    model_hash: str
    kv_type: str
    runtime_key: str
    source: str = "measured"


def _path(judge) -> Path:
    return state_dir() / "judge" / "noise" / f"{judge.runtime_key()}.json"


def measure_noise_floor(judge, store: bool = True) -> NoiseFloor:
    """Measure the floor of ``judge`` on the probe (module docstring); store it if ``store``.

    Costs ``n_seq - 2`` batched candidates plus every ``PROBE_GROUPS`` document twice (batch
and one pair at a time).
    """
    slots = judge.config.n_seq - 2
    same = judge.score(PROBE_QUERY, [PROBE_DOCUMENTS[0]] * slots).scores
    spread = max(same) - min(same)
    gap = 0.0
    for query, documents in PROBE_GROUPS:
        batch = judge.score(query, list(documents)).scores
        naive = judge.score_naive(query, list(documents)).scores
        gap = max(gap, *(abs(a - b) for a, b in zip(batch, naive, strict=True)))
    floor = math.ceil(max(spread, gap) * 100 - 1e-9) / 100
    result = NoiseFloor(floor=floor, slot_spread=round(spread, 4), batch_naive_gap=round(gap, 4),
                        n_documents=sum(len(d) for _, d in PROBE_GROUPS),
                        model_hash=judge.model_hash, kv_type=judge.config.kv_type,
                        runtime_key=judge.runtime_key())
    if store:
        path = _path(judge)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(asdict(result), sort_keys=True) + "\n")
        os.replace(tmp, path)
    return result


def stored_noise_floor(judge) -> NoiseFloor | None:
    """The stored measurement for ``judge``'s runtime settings, or ``None``.

    Raises ``JudgeError`` naming the file if it exists but cannot be read."""
    path = _path(judge)
    if not path.exists():
        return None
    try:
        return NoiseFloor(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError) as exc:
        raise JudgeError(f"cannot read the stored noise floor {path}: {exc}; delete it and "
                         "run `junction judge noise`") from exc


def noise_floor(judge) -> NoiseFloor:
    """The noise floor of ``judge``: stored, else shipped, else measured now and stored."""
    stored = stored_noise_floor(judge)
    if stored is not None:
        return stored
    for key in (judge.model_hash, judge.model_hash[:12]):
        shipped = SHIPPED_NOISE_FLOORS.get((key, judge.config.kv_type))
        if shipped is not None:
            return NoiseFloor(floor=shipped, slot_spread=None, batch_naive_gap=None,
                              n_documents=0, model_hash=judge.model_hash,
                              kv_type=judge.config.kv_type, runtime_key=judge.runtime_key(),
                              source="shipped")
    return measure_noise_floor(judge)
