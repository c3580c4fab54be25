"""Learned utilities: calibrated relevance and interactions fitted on training rows.

- ``features``: candidate and pair features, from the router view only;
- ``model``: scikit-learn's calibrated logistic model and its stored description;
- ``relevance``: p(gold) per pooled candidate, both lanes; ``ranking``: the ranking
  measures of a relevance stage on its own;
- ``utility``: a family's fitted models and the expected-value objective, λ and τ chosen on
  training; ``grid``: the exact selections of that λ × τ search, here or on worker
  processes;
- ``crossfit``: the folds of a cross-fitted suite (which tasks each repetition holds out).
"""

from junction.learned.model import LearnedModelError, ProbabilityModel, fit_probability_model
from junction.learned.utility import LearnedUtility, fit_learned_utility

__all__ = ["LearnedModelError", "LearnedUtility", "ProbabilityModel", "fit_learned_utility",
           "fit_probability_model"]
