"""Modularity and explicitness (Ridgeway & Zemel 2018), disentanglement_lib's estimators.

Factors enter as class labels (:mod:`hier_metrics._factor_labels`): categorical factors
keep their values, continuous ones are cut into ``num_bins`` equal-width bins, and with
``factor_active`` (``ground_truth.active(factors)``) an inactive factor is a class of its
own. On discrete factors with at most ``num_bins`` values (disentanglement_lib's
datasets) the values are disentanglement_lib's.

On hierarchical data: a code that tells whether a branch exists shares information with
every factor of that branch (their "inactive" class), so a code of a categorical is
modular only as far as its branch's factors are rarely inactive; explicitness asks
whether each factor's class, "inactive" included, is linearly decodable from the codes.

Constant factors (one class over the rows) are left out, as in every metric here;
every factor constant raises ``ValueError``.
"""
from __future__ import annotations

import numpy as np

from hier_metrics._factor_labels import factor_labels, train_test_labels
from hier_metrics._validation import (
    check_array,
    check_fraction,
    check_not_all_constant,
    check_random_state,
    check_same_rows,
    constant_columns,
)
from hier_metrics.downstream import quiet_fits
from hier_metrics.mig import discrete_mutual_info, histogram_discretize

__all__ = ["modularity", "explicitness", "modularity_from_mutual_information"]


def modularity_from_mutual_information(mutual_information) -> float:
    """Modularity of a (num_factors, num_codes) mutual-information matrix.

    Ridgeway & Zemel 2018, section 3 (eq. 1): for code j with informations m_kj about
    the N factors and theta_j = max_k m_kj, the deviation from an ideal template that
    keeps only the largest is ``delta_j = sum_k (m_kj - t_kj)^2 / (theta_j^2 (N - 1))``
    = ``(sum_k m_kj^2 - theta_j^2) / (theta_j^2 (N - 1))``; modularity_j = 1 - delta_j,
    0 for a code with no information (theta_j = 0), 1 for an informative code when
    there is a single factor; the result is the mean over codes.

    >>> modularity_from_mutual_information([[1.0, 0.0], [0.0, 2.0]])
    1.0
    >>> modularity_from_mutual_information([[1.0], [1.0]])  # one code, two equal factors
    0.0
    """
    m = np.asarray(mutual_information, dtype=np.float64)
    if m.ndim != 2 or m.size == 0 or not np.all(np.isfinite(m)) or np.any(m < 0):
        raise ValueError(f"mutual_information must be a non-empty 2-D array of finite values >= 0, got shape {m.shape}")
    squared = m**2
    top = squared.max(axis=0)
    informative = top > 0
    if m.shape[0] == 1:
        per_code = informative.astype(np.float64)
    else:
        delta = (squared.sum(axis=0) - top) / np.where(informative, top, 1.0) / (m.shape[0] - 1)
        per_code = np.where(informative, 1.0 - delta, 0.0)
    return float(per_code.mean())


def modularity(factors, codes, *, num_bins: int = 20, categorical="auto", factor_active=None) -> dict:
    """Modularity (Ridgeway & Zemel 2018, section 3): each code informs about one factor.

    The mutual information between each factor (as class labels) and each code cut
    into ``num_bins`` equal-width bins, then
    :func:`modularity_from_mutual_information`. 1 when every informative code carries
    information about a single factor; a code informing equally about all N factors
    scores 1 - N / (N - 1) * (1 - 1/N) = 0.

    Args:
      factors: (n, K) ground-truth factors; codes: (n, D) codes.
      num_bins: histogram bins of the codes and of continuous factors.
      categorical: which factor columns are categorical (``"auto"``, a mask, indices
        or a ``Hierarchy``).
      factor_active: optional (n, K) activity of the factors (inactive = own class).

    Returns:
      ``{"score", "modularity_score"}``, the same number.

    Raises:
      ValueError: bad arrays or options, or every factor constant.
    """
    factors = check_array(factors, "factors")
    codes = check_array(codes, "codes")
    check_same_rows(factors=factors, codes=codes)
    labels = factor_labels(factors, categorical=categorical, num_bins=num_bins, factor_active=factor_active)
    constant = constant_columns(labels)
    check_not_all_constant(constant)
    info = discrete_mutual_info(labels[:, ~constant], histogram_discretize(codes, num_bins))
    value = modularity_from_mutual_information(info)
    return {"score": value, "modularity_score": value}


def _class_auc(y: np.ndarray, proba: np.ndarray, classes: np.ndarray) -> float:
    """Macro mean over classes of the one-vs-rest ROC AUC, over classes present with
    both outcomes in ``y``."""
    from sklearn.metrics import roc_auc_score

    aucs = []
    for c, label in enumerate(classes):
        positive = y == label
        if positive.any() and not positive.all():
            aucs.append(roc_auc_score(positive, proba[:, c]))
    return float(np.mean(aucs)) if aucs else float("nan")


def explicitness(
    factors,
    codes,
    *,
    test_factors=None,
    test_codes=None,
    test_size: float = 1 / 3,
    num_bins: int = 20,
    categorical="auto",
    factor_active=None,
    test_factor_active=None,
    random_state=0,
) -> dict:
    """Explicitness (Ridgeway & Zemel 2018, section 3): factors linearly decodable from the codes.

    Per factor, a logistic regression (scikit-learn's defaults) from all codes,
    standardised with the training mean and standard deviation, to the factor's class;
    its one-vs-rest ROC AUC averaged over classes (eq. 2's area under the ROC curve,
    macro-averaged); the result is the mean over factors. 1 for perfectly separable
    classes, about 0.5 for codes that carry nothing.

    Args:
      factors, codes: (n, K) and (n, D) training rows.
      test_factors, test_codes: held-out rows (disentanglement_lib draws a fresh
        sample); without them ``test_size`` of the rows are held out at random.
      num_bins, categorical, factor_active: as for :func:`modularity`;
        ``test_factor_active`` the activity of ``test_factors``.
      random_state: integer seed or Generator (the split and the solver).

    Returns:
      ``{"score", "explicitness_score_train", "explicitness_score_test"}``;
      ``score`` is the test value.

    Raises:
      ValueError: bad arrays or options, or every factor constant.
    """
    factors = check_array(factors, "factors")
    codes = check_array(codes, "codes")
    check_same_rows(factors=factors, codes=codes)
    rng = check_random_state(random_state)
    if (test_factors is None) != (test_codes is None):
        raise ValueError("give both test_factors and test_codes, or neither")
    if test_factors is None:
        check_fraction(test_size, "test_size")
        labels = factor_labels(factors, categorical=categorical, num_bins=num_bins, factor_active=factor_active)
        order = rng.permutation(len(factors))
        cut = len(factors) - max(1, int(round(test_size * len(factors))))
        train, test = order[:cut], order[cut:]
        y_train, y_test, x_train, x_test = labels[train], labels[test], codes[train], codes[test]
    else:
        x_test, y_train, y_test = train_test_labels(
            factors, codes, test_factors, test_codes, categorical=categorical, num_bins=num_bins,
            factor_active=factor_active, test_factor_active=test_factor_active,
        )
        x_train = codes
    constant = constant_columns(y_train)
    check_not_all_constant(constant, where=" over the training rows")
    mean, std = x_train.mean(axis=0), x_train.std(axis=0)
    std = np.where(std > 0, std, 1.0)
    x_train, x_test = (x_train - mean) / std, (x_test - mean) / std
    from sklearn.linear_model import LogisticRegression

    train_scores, test_scores = [], []
    for j in np.flatnonzero(~constant):
        model = LogisticRegression(random_state=int(rng.integers(2**31 - 1)))
        with quiet_fits():
            model.fit(x_train, y_train[:, j])
        train_scores.append(_class_auc(y_train[:, j], model.predict_proba(x_train), model.classes_))
        test_scores.append(_class_auc(y_test[:, j], model.predict_proba(x_test), model.classes_))
    train_value, test_value = float(np.nanmean(train_scores)), float(np.nanmean(test_scores))
    return {"score": test_value, "explicitness_score_train": train_value, "explicitness_score_test": test_value}
