"""Learned utilities: calibrated relevance and interactions fitted on training rows.

``features`` (from the router view only), ``model`` (scikit-learn's calibrated logistic
model and its stored description), ``utility`` (a family's fitted models, the
expected-value objective, lam and tau chosen on training).
"""

from junction.learned.model import LearnedModelError, ProbabilityModel, fit_probability_model
from junction.learned.utility import LearnedUtility, fit_learned_utility

__all__ = ["LearnedModelError", "LearnedUtility", "ProbabilityModel", "fit_learned_utility",
           "fit_probability_model"]
