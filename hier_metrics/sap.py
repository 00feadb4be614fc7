"""Separated attribute predictability (Kumar et al. 2018), disentanglement_lib's version.

Constant factors: a factor that holds a single value carries no information to recover.
Its row of :func:`sap_matrix` is NaN, it is left out of the mean over factors, and
a call where every factor is constant raises ``ValueError``. On inputs without constant
factors the values are disentanglement_lib's. The matrix is factors x codes (truth
first), as everywhere in :mod:`hier_metrics`.
"""
from __future__ import annotations

import numpy as np

from hier_metrics._univariate import random_splits
from hier_metrics._validation import (
    check_array,
    check_forwarded_options,
    check_fraction,
    check_not_all_constant,
    check_random_state,
    check_same_rows,
    constant_columns,
    resolve_categorical,
)

__all__ = ["sap", "sap_matrix"]


def _linear_r2(codes: np.ndarray, factors: np.ndarray) -> np.ndarray:
    """(num_codes, num_factors) squared Pearson correlation; 0 where either is constant."""
    c = codes - codes.mean(axis=0)
    f = factors - factors.mean(axis=0)
    cov = c.T @ f
    var_c = np.sum(c**2, axis=0)
    var_f = np.sum(f**2, axis=0)
    denom = np.outer(var_c, var_f)
    ok = (var_c[:, None] > 1e-12 * len(codes)) & (var_f[None, :] > 1e-12 * len(codes))
    return np.where(ok, cov**2 / np.where(ok, denom, 1.0), 0.0)


def sap_matrix(factors, codes, *, categorical="auto", test_size: float = 1 / 3, random_state=0,
               standardize: bool = False) -> np.ndarray:
    """(num_factors, num_codes) predictability of each factor from each single code.

    Continuous factors: the R^2 of a linear fit, i.e. the squared correlation, on all
    rows. Categorical factors: the held-out accuracy of a linear SVM
    (``LinearSVC(C=0.01, class_weight="balanced")``) on one code, with a random
    ``test_size`` split, as disentanglement_lib does for discrete factors. The row
    of a constant factor is NaN; every factor constant raises ``ValueError``.

    The SVM's penalty makes categorical scores depend on the codes' scale: codes on a
    small scale (e.g. the true factors in Chopsticks' own units) score lower.
    ``standardize=True`` divides each code by its standard deviation first, which makes
    every score scale-free; the default (False) is disentanglement_lib's procedure.
    """
    factors = check_array(factors, "factors", min_rows=3)
    codes = check_array(codes, "codes", min_rows=3)
    check_same_rows(factors=factors, codes=codes)
    check_fraction(test_size, "test_size")
    cat = resolve_categorical(factors, categorical, "factors")
    rng = check_random_state(random_state)
    constant = constant_columns(factors)
    check_not_all_constant(constant)
    scores = _linear_r2(codes, factors).T
    scores[constant] = np.nan
    if standardize:
        spread = codes.std(axis=0)
        codes = codes / np.where(spread > 0, spread, 1.0)
    if (cat & ~constant).any():
        from sklearn.svm import LinearSVC

        train, test = next(random_splits(factors.shape[0], 1, test_size, rng))
        for j in np.flatnonzero(cat & ~constant):
            y = factors[:, j].astype(np.int64)
            for i in range(codes.shape[1]):
                x = codes[:, i : i + 1]
                if np.unique(y[train]).size < 2 or np.ptp(x[train]) == 0:
                    scores[j, i] = 0.0
                    continue
                model = LinearSVC(C=0.01, class_weight="balanced", random_state=int(rng.integers(2**31 - 1)))
                model.fit(x[train], y[train])
                scores[j, i] = np.mean(model.predict(x[test]) == y[test])
    return scores


def sap(factors, codes, *, random_state=0, **options) -> dict:
    """SAP score: mean over factors of the gap between the two most predictive codes.

    ``SAP = mean_k (S_(1)k - S_(2)k)`` with S the matrix of :func:`sap_matrix`
    (options ``categorical``, ``test_size``, ``standardize``); the second score is 0 when there is a
    single code. A duplicated code closes the gap, so SAP penalises it. The mean runs
    over the factors that are not constant.

    Args:
      factors: (n, K) ground-truth factors.
      codes: (n, D) learned codes.
      random_state: an integer seed or a numpy Generator (the train/test split).
      **options: ``categorical``, ``test_size``, ``standardize``, as for :func:`sap_matrix`.

    Returns:
      ``{"score": float, "sap": float}``, the same number under both keys.

    Raises:
      ValueError: arrays that are not finite 2-D arrays with the same number of rows,
        a bad option, or every factor constant.
      TypeError: ``random_state`` neither an integer nor a Generator.

    Example:
      >>> import numpy as np
      >>> rng = np.random.default_rng(0)
      >>> factors = rng.uniform(size=(300, 2))
      >>> codes = np.column_stack([np.exp(factors[:, 1]), 3 * factors[:, 0]])
      >>> round(sap(factors, codes)["score"], 2)
      0.98
      >>> round(sap(factors, np.column_stack([codes, codes[:, :1]]))["score"], 2)  # a duplicate closes one gap
      0.5
    """
    check_forwarded_options(sap, options, sap_matrix, passed=("factors", "codes", "random_state"))
    scores = sap_matrix(factors, codes, random_state=random_state, **options)
    scores = scores[~np.isnan(scores[:, 0])]  # constant factors are left out
    top = np.sort(scores, axis=1)[:, ::-1]
    second = top[:, 1] if top.shape[1] > 1 else np.zeros(top.shape[0])
    value = float(np.mean(top[:, 0] - second))
    return {"score": value, "sap": value}
