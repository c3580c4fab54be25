"""One judge session per process: the loaded judge, its smoke test run once per
instruction, the score cache and the noise floor.

Every judge user (``judge_admission``, the page strategies, ``subtask_admission``,
``junction admit``) opens the judge through ``judge_session`` instead of repeating the
load / smoke / cache / floor steps.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from junction.environment import state_dir
from junction.judge.cache import ScoreCache
from junction.judge.instructions import RerankInstruction
from junction.judge.model import JudgeConfig
from junction.judge.noise import NoiseFloor, noise_floor
from junction.judge.scorer import load_judge
from junction.judge.smoke import run_smoke

__all__ = ["SCORE_CACHE_NAME", "JudgeSession", "judge_session"]

SCORE_CACHE_NAME = "judge_scores.sqlite"
"""The judge score cache's file name under ``state_dir()`` (one of
``junction.sqlite_cache.CACHE_FILES``)."""

_LOCK = threading.Lock()
_SMOKED: set[tuple[Any, str]] = set()
_NOISE: dict[Any, NoiseFloor] = {}


@dataclass
class JudgeSession:
    """A loaded judge (``judge``), its score cache (``cache``; None: no cache) and its
    noise floor (``noise``, logits: measured or read once per process, on first use)."""

    judge: Any
    cache: ScoreCache | None
    config: JudgeConfig
    _noise: NoiseFloor | None = field(default=None, repr=False)

    @property
    def noise(self) -> NoiseFloor:
        """The judge's noise floor (``junction.judge.noise.noise_floor``), once per process."""
        if self._noise is None:
            with _LOCK:
                if self.config not in _NOISE:
                    _NOISE[self.config] = noise_floor(self.judge)
                self._noise = _NOISE[self.config]
        return self._noise

    def provenance(self, instruction: RerankInstruction) -> dict[str, Any]:
        """The judge's provenance for ``instruction`` plus the noise floor and its source."""
        return {**self.judge.provenance(instruction), "noise_floor": self.noise.floor,
                "noise_floor_source": self.noise.source}


def judge_session(config: JudgeConfig, instructions: Sequence[RerankInstruction],
                  use_cache: bool = True) -> JudgeSession:
    """Load the judge of ``config`` (once per process: ``load_judge``), run its smoke test
    for each instruction once per process (``SmokeTestError`` naming the failed gate) and
    open the score cache (``state_dir()/judge_scores.sqlite``) unless ``use_cache`` is
    False."""
    judge = load_judge(config)
    for instruction in instructions:
        key = (config, judge.instruction_hash(instruction))
        with _LOCK:
            if key not in _SMOKED:
                run_smoke(judge, instruction)
                _SMOKED.add(key)
    cache = ScoreCache(state_dir() / SCORE_CACHE_NAME) if use_cache else None
    return JudgeSession(judge=judge, cache=cache, config=config)
