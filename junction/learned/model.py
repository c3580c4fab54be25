"""Calibrated relevance models fitted on training rows, and their stored description.

``fit_probability_model(X, y, names, seed)`` fits scikit-learn's ``CalibratedClassifierCV``
around a ``StandardScaler`` + ``LogisticRegression`` pipeline (L2, C = 1, lbfgs), with
Platt's sigmoid calibration (``method="sigmoid"``, Platt 1999) on out-of-fold decision
values of a ``StratifiedKFold`` without shuffling (5 folds, fewer when a class has fewer
rows) and one classifier refitted on all rows (``ensemble=False``): one logistic model and
one sigmoid, so the description below is the whole model. lbfgs and unshuffled folds make
the fit deterministic for given rows; ``seed`` is passed to the estimator all the same.

A class with fewer than ``MIN_CLASS_ROWS`` rows cannot be calibrated: the model is then the
constant (k + 0.5) / (n + 1) (Jeffreys' prior on the positive rate; a lane that was never
gold in training stays near 0).

``ProbabilityModel.describe()`` is a JSON-ready dict (feature names, scaler mean and
scale, coefficients and intercept, sigmoid slope and intercept, row counts);
``model_sha256`` hashes its canonical JSON (sorted keys, ``repr`` floats), so equal
training rows give an equal hash.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from junction.errors import JunctionError

if TYPE_CHECKING:  # scikit-learn is imported where a model is fitted: a run without a
    from sklearn.calibration import CalibratedClassifierCV  # fit (and every CLI start)
    #                                                         does not pay its ~1 s import

__all__ = [
    "CALIBRATION_FOLDS",
    "MIN_CLASS_ROWS",
    "LearnedModelError",
    "ProbabilityModel",
    "canonical_sha256",
    "fit_probability_model",
]

CALIBRATION_FOLDS = 5
"""Folds of the out-of-fold decision values the sigmoid is fitted on (scikit-learn's
default ``cv=5``)."""

MIN_CLASS_ROWS = 2
"""Fewest rows of each class a calibrated fit needs (one per fold, two folds)."""


class LearnedModelError(JunctionError, ValueError):
    """Training rows cannot make a model (shape mismatch, non-finite value, empty)."""


def canonical_sha256(value: Any) -> str:
    """sha256 of ``value`` as canonical JSON (sorted keys, no spaces, finite numbers)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class ProbabilityModel:
    """p(label = 1 | features): a calibrated logistic model, or a constant."""

    features: tuple[str, ...]
    n_rows: int
    n_positive: int
    estimator: CalibratedClassifierCV | None
    constant: float | None = None

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Probabilities, shape (n_rows,), for feature rows ``X`` (n_rows, n_features).
        Raises ``LearnedModelError`` on a column-count mismatch."""
        X = np.asarray(X, dtype=float)
        if X.ndim != 2 or X.shape[1] != len(self.features):
            raise LearnedModelError(f"feature matrix has shape {X.shape}; the model expects "
                                    f"{len(self.features)} columns ({', '.join(self.features)})")
        if self.estimator is None:
            assert self.constant is not None  # set whenever no estimator was fitted
            return np.full(X.shape[0], float(self.constant))
        if X.shape[0] == 0:
            return np.zeros(0)
        return self.estimator.predict_proba(X)[:, 1]

    def describe(self) -> dict[str, Any]:
        """The model as plain JSON values (see the module docstring)."""
        out: dict[str, Any] = {"features": list(self.features), "n_rows": self.n_rows,
                               "n_positive": self.n_positive}
        if self.estimator is None:
            out["constant"] = self.constant
            return out
        calibrated = self.estimator.calibrated_classifiers_[0]
        scaler, logistic = calibrated.estimator.steps[0][1], calibrated.estimator.steps[1][1]
        sigmoid = calibrated.calibrators[0]
        out.update(
            scaler_mean=[float(v) for v in scaler.mean_],
            scaler_scale=[float(v) for v in scaler.scale_],
            coefficients=[float(v) for v in logistic.coef_[0]],
            intercept=float(logistic.intercept_[0]),
            sigmoid_a=float(sigmoid.a_), sigmoid_b=float(sigmoid.b_),
        )
        return out


def fit_probability_model(X: np.ndarray, y: Sequence[int] | np.ndarray, features: Sequence[str],
                          seed: int = 0) -> ProbabilityModel:
    """Fit p(y = 1 | X) as described in the module docstring.

    ``X``: (n_rows, len(features)) floats; ``y``: n_rows labels in {0, 1}. Raises
    ``LearnedModelError`` on a shape mismatch, a non-finite feature or a label outside
    {0, 1}.
    """
    X = np.asarray(X, dtype=float)
    y_arr = np.asarray(y, dtype=int)
    if X.ndim != 2 or X.shape[1] != len(features) or X.shape[0] != y_arr.shape[0]:
        raise LearnedModelError(f"training rows: X has shape {X.shape}, y {y_arr.shape}, "
                                f"{len(features)} feature names")
    if not np.isfinite(X).all():
        raise LearnedModelError("training rows: a feature value is not finite")
    if not set(np.unique(y_arr)) <= {0, 1}:
        raise LearnedModelError("training rows: labels must be 0 or 1")
    n, k = int(X.shape[0]), int(y_arr.sum())
    if min(k, n - k) < MIN_CLASS_ROWS:
        return ProbabilityModel(tuple(features), n, k, None, (k + 0.5) / (n + 1))
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    folds = StratifiedKFold(n_splits=min(CALIBRATION_FOLDS, k, n - k))
    base = make_pipeline(StandardScaler(),
                         LogisticRegression(C=1.0, max_iter=5000, random_state=seed))
    model = CalibratedClassifierCV(base, method="sigmoid", cv=folds, ensemble=False)
    with warnings.catch_warnings():
        # constant columns (e.g. a source kind never seen) scale to 0: harmless
        warnings.simplefilter("ignore", RuntimeWarning)
        model.fit(X, y_arr)
    return ProbabilityModel(tuple(features), n, k, model)
