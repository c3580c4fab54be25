"""The judge admission lane: a yes/no judge on llama.cpp with prefix-shared batch scoring.

score(query, document) = logit("yes") - logit("no") at the answer position (logits),
comparable only within one query and one instruction. See ``scorer`` for the batch path,
``smoke`` for the start-up gates; the ``judge_admission`` strategy that uses it lives in
``junction.strategies.judge_admission``.
"""

from junction.judge.cache import ScoreCache, cached_scores
from junction.judge.errors import JudgeError, SmokeTestError
from junction.judge.instructions import RETRIEVAL_INSTRUCTION, RerankInstruction, SmokeFixture
from junction.judge.model import JudgeConfig
from junction.judge.scorer import load_judge
from junction.judge.smoke import SmokeReport, run_smoke

__all__ = [
    "RETRIEVAL_INSTRUCTION",
    "JudgeConfig",
    "JudgeError",
    "RerankInstruction",
    "ScoreCache",
    "SmokeFixture",
    "SmokeReport",
    "SmokeTestError",
    "cached_scores",
    "load_judge",
    "run_smoke",
]
