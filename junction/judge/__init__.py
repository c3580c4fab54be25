"""The judge admission lane: a yes/no judge on llama.cpp with prefix-shared batch scoring.

score(query, document) = logit("yes") - logit("no") at the answer position (logits),
comparable only within one query and one instruction. The
``judge_admission`` strategy that uses it lives in ``junction.strategies.judge_admission``.

- ``scorer``: the yes/no judge with prefix-shared batch scoring; ``batch``: what one
  scoring call returns; ``prompt_tokens``: the model's tokens and a prompt's parts;
- ``llama``: llama.cpp's binding, imported on first use; ``model``: the judge's
  configuration; ``templates`` and ``instructions``: the prompt and its criterion;
- ``smoke``: the start-up gates; ``noise``: the noise floor below which score differences
  mean nothing; ``session``: one judge per process (smoke test, cache, noise floor);
- ``cache``: the persistent score cache; ``errors``: the lane's typed errors.
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
