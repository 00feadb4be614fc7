"""Downstream tasks (Locatello et al. 2019, section 4.3): how well simple classifiers
predict each factor from the codes, at several training-set sizes."""
from __future__ import annotations

import contextlib
import warnings

import numpy as np

from hier_metrics._factor_labels import factor_labels, train_test_labels
from hier_metrics._validation import (
    check_array,
    check_positive_int,
    check_random_state,
    check_same_rows,
    constant_columns,
)

__all__ = ["downstream_task", "strong_downstream_task", "make_predictor", "PREDICTORS"]

#: disentanglement_lib's two predictors
PREDICTORS = ("logistic_regression", "boosted_trees")


def make_predictor(predictor: str, seed: int):
    """A fresh scikit-learn classifier: ``"logistic_regression"`` is
    ``LogisticRegressionCV(Cs=10, cv=KFold(5))``, ``"boosted_trees"`` is
    ``GradientBoostingClassifier()`` (disentanglement_lib's settings)."""
    if predictor == "logistic_regression":
        from sklearn.linear_model import LogisticRegressionCV
        from sklearn.model_selection import KFold

        return LogisticRegressionCV(Cs=10, cv=KFold(n_splits=5), random_state=seed)
    if predictor == "boosted_trees":
        from sklearn.ensemble import GradientBoostingClassifier

        return GradientBoostingClassifier(random_state=seed)
    raise ValueError(f"predictor must be one of {list(PREDICTORS)}, got {predictor!r}")


def check_interventional_call(representation_function, predictor: str) -> None:
    """TypeError for a representation that is not callable, ValueError for an unknown predictor."""
    if not callable(representation_function):
        raise TypeError(f"representation_function must be callable, got {type(representation_function).__name__}")
    if predictor not in PREDICTORS:
        raise ValueError(f"predictor must be one of {list(PREDICTORS)}, got {predictor!r}")


@contextlib.contextmanager
def quiet_fits():
    """Silence scikit-learn's convergence and deprecation notices while classifiers are
    fitted with the reference settings (they are part of the definition)."""
    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", FutureWarning)
        yield


def _accuracies(x_train, y_train, x_test, y_test, predictor, rng) -> tuple[list, list]:
    """Per-factor train and test accuracy; a factor with one class in training is
    predicted as that class."""
    train, test = [], []
    for k in range(y_train.shape[1]):
        if np.unique(y_train[:, k]).size < 2:
            train.append(1.0)
            test.append(float(np.mean(y_test[:, k] == y_train[0, k])))
            continue
        model = make_predictor(predictor, int(rng.integers(2**31 - 1)))
        with quiet_fits():
            model.fit(x_train, y_train[:, k])
        train.append(float(np.mean(model.predict(x_train) == y_train[:, k])))
        test.append(float(np.mean(model.predict(x_test) == y_test[:, k])))
    return train, test


def downstream_task(
    factors,
    codes,
    *,
    test_factors,
    test_codes,
    train_sizes=None,
    predictor: str = "logistic_regression",
    num_bins: int = 20,
    categorical="auto",
    factor_active=None,
    test_factor_active=None,
    random_state=0,
) -> dict:
    """Accuracy of a classifier per factor, from all codes (disentanglement_lib's
    ``downstream_task``).

    For each training-set size s (the first s training rows), one classifier per
    factor is fitted on the codes and its accuracy measured on the training rows and
    on the test rows. Factors enter as class labels (categorical ones keep their
    values, continuous ones are cut into ``num_bins`` equal-width bins; with an activity
    mask "inactive" is a class of its own, so on hierarchical data the task includes
    telling whether a factor exists). A factor that is constant over all rows is left
    out; one with a single class among the first s rows is predicted as that class.

    Args:
      factors, codes: (n, K) and (n, D) training rows.
      test_factors, test_codes: held-out rows.
      train_sizes: training-set sizes, each at most n; default ``(n,)``.
      predictor: ``"logistic_regression"`` or ``"boosted_trees"`` (:func:`make_predictor`).
      num_bins, categorical, factor_active, test_factor_active: how factors become classes.
      random_state: integer seed or Generator (the classifiers' seeds).

    Returns:
      for each size s, ``"{s}:mean_train_accuracy"``, ``"{s}:mean_test_accuracy"``,
      ``"{s}:min_train_accuracy"``, ``"{s}:min_test_accuracy"``,
      ``"{s}:train_accuracy_factor_{k}"``, ``"{s}:test_accuracy_factor_{k}"`` (k the
      factor's column), and ``score``: the mean test accuracy at the largest size.

    Raises:
      ValueError: bad arrays, sizes or predictor, or every factor constant.
    """
    factors = check_array(factors, "factors")
    codes = check_array(codes, "codes")
    check_same_rows(factors=factors, codes=codes)
    if predictor not in PREDICTORS:
        raise ValueError(f"predictor must be one of {list(PREDICTORS)}, got {predictor!r}")
    sizes = [len(factors)] if train_sizes is None else [check_positive_int(s, "train_sizes") for s in train_sizes]
    if not sizes or max(sizes) > len(factors):
        raise ValueError(f"train_sizes must be a non-empty list of sizes up to {len(factors)} rows, got {train_sizes!r}")
    rng = check_random_state(random_state)
    test_codes, y_train, y_test = train_test_labels(
        factors, codes, test_factors, test_codes, categorical=categorical, num_bins=num_bins,
        factor_active=factor_active, test_factor_active=test_factor_active,
    )
    labels = np.concatenate([y_train, y_test])
    varying = np.flatnonzero(~constant_columns(labels))
    if varying.size == 0:
        raise ValueError("every column of factors is constant, so there is nothing to predict")
    y_train, y_test = y_train[:, varying], y_test[:, varying]
    out: dict = {}
    for s in sizes:
        train, test = _accuracies(codes[:s], y_train[:s], test_codes, y_test, predictor, rng)
        out[f"{s}:mean_train_accuracy"] = float(np.mean(train))
        out[f"{s}:mean_test_accuracy"] = float(np.mean(test))
        out[f"{s}:min_train_accuracy"] = float(np.min(train))
        out[f"{s}:min_test_accuracy"] = float(np.min(test))
        for k, a, b in zip(varying, train, test):
            out[f"{s}:train_accuracy_factor_{k}"] = a
            out[f"{s}:test_accuracy_factor_{k}"] = b
    out["score"] = out[f"{max(sizes)}:mean_test_accuracy"]
    return out


def strong_downstream_task(
    ground_truth,
    representation_function,
    *,
    train_sizes=(1000,),
    num_test: int = 5000,
    num_experiments: int = 10,
    predictor: str = "boosted_trees",
    factor_values=None,
    num_bins: int = 20,
    categorical="auto",
    random_state=0,
) -> dict:
    """Downstream accuracy under a covariate shift (disentanglement_lib's
    ``strong_downstream_task``; Locatello et al. 2019's strong generalisation).

    For each training size s: ``s`` training and ``num_test`` test samples; the plain
    task (:func:`downstream_task`) on them; then, for each target factor i and each of
    ``num_experiments`` repetitions, another factor j != i is drawn at random together
    with one of its values v (from ``factor_values``): the training rows all get
    j = v, the test rows other values of j drawn uniformly; a classifier of i is
    fitted on the shifted training rows and scored on both. A representation whose
    code of i does not move with j generalises across the shift.
    ``strong_generalization_gap = 1 - mean_strong_test_accuracy / mean_test_accuracy``.

    On hierarchical data (a ground truth with ``hierarchy`` and ``sample_factors(...,
    fixed=...)``), the shifted rows are drawn from j's population with j fixed (what
    depends on j drawn given it); on flat data the sampled rows are reused with
    column j overwritten, disentanglement_lib's procedure. Factors enter as classes
    as in :func:`downstream_task`.

    Args:
      ground_truth, representation_function: as for :func:`hier_metrics.fairness`.
      train_sizes: training-set sizes.
      num_test, num_experiments: test rows and repetitions per target factor.
      predictor: ``"logistic_regression"`` or ``"boosted_trees"``.
      factor_values: values of each factor to shift to; default
        :func:`hier_metrics.fairness.intervention_values` of the first training sample.
      num_bins, categorical: how factors become classes (``categorical`` when the
        ground truth has no ``hierarchy``).
      random_state: integer seed or Generator for every draw.

    Returns:
      for each size s: ``"{s}:mean_train_accuracy"``, ``"{s}:mean_test_accuracy"``,
      ``"{s}:mean_strong_train_accuracy"``, ``"{s}:mean_strong_test_accuracy"``,
      ``"{s}:strong_generalization_gap"``; ``score`` is the mean strong test accuracy
      at the largest size.

    Raises:
      ValueError: bad sizes, predictor or values; a factor with a single value to
        shift among; TypeError: a representation that is not callable.
    """
    from hier_metrics.fairness import intervention_values
    from hier_metrics.interventional import FactorSampler, _encode

    check_interventional_call(representation_function, predictor)
    sizes = [check_positive_int(s, "train_sizes", minimum=2) for s in train_sizes]
    if not sizes:
        raise ValueError("train_sizes must name at least one size")
    check_positive_int(num_test, "num_test")
    check_positive_int(num_experiments, "num_experiments")
    rng = check_random_state(random_state)
    sampler = FactorSampler(ground_truth, rng)
    hierarchy = getattr(ground_truth, "hierarchy", None)
    nested = sampler.intervenes and hierarchy is not None
    k = sampler.num_factors
    if k < 2:
        raise ValueError("the strong downstream task shifts another factor than the target: it needs two factors")
    if hierarchy is not None:
        categorical = hierarchy

    def classes(train_rows, test_rows):
        both = np.concatenate([train_rows, test_rows])
        active = hierarchy.activity_mask(both) if hierarchy is not None else None
        labels = factor_labels(both, categorical=categorical, num_bins=num_bins, factor_active=active)
        return labels[: len(train_rows)], labels[len(train_rows):]

    out: dict = {}
    for s in sizes:
        f_train, f_test = sampler.draw(None, s), sampler.draw(None, num_test)
        z_train = _encode(ground_truth, representation_function, f_train, rng)
        z_test = _encode(ground_truth, representation_function, f_test, rng)
        values = factor_values if factor_values is not None else intervention_values(f_train, hierarchy, num_bins=num_bins)
        values = [np.asarray(v, dtype=np.float64).ravel() for v in values]
        if len(values) != k or any(v.size < 2 for v in values):
            raise ValueError(f"factor_values must give at least two values for each of the {k} factors")
        y_train, y_test = classes(f_train, f_test)
        train_acc, test_acc = _accuracies(z_train, y_train, z_test, y_test, predictor, rng)
        strong_train, strong_test = [], []
        for i in range(k):
            for _ in range(num_experiments):
                j = int(rng.choice([m for m in range(k) if m != i]))
                pick = int(rng.integers(values[j].size))
                others = np.delete(values[j], pick)[rng.integers(values[j].size - 1, size=num_test)]
                if nested:
                    a = sampler.draw(j, s, np.full(s, values[j][pick]))
                    b = sampler.draw(j, num_test, others)
                else:
                    a, b = f_train.copy(), f_test.copy()
                    a[:, j], b[:, j] = values[j][pick], others
                za = _encode(ground_truth, representation_function, a, rng)
                zb = _encode(ground_truth, representation_function, b, rng)
                ya, yb = classes(a, b)
                tr, te = _accuracies(za, ya[:, [i]], zb, yb[:, [i]], predictor, rng)
                strong_train += tr
                strong_test += te
        out[f"{s}:mean_train_accuracy"] = float(np.mean(train_acc))
        out[f"{s}:mean_test_accuracy"] = float(np.mean(test_acc))
        out[f"{s}:mean_strong_train_accuracy"] = float(np.mean(strong_train))
        out[f"{s}:mean_strong_test_accuracy"] = float(np.mean(strong_test))
        out[f"{s}:strong_generalization_gap"] = 1.0 - out[f"{s}:mean_strong_test_accuracy"] / out[f"{s}:mean_test_accuracy"]
    out["score"] = out[f"{max(sizes)}:mean_strong_test_accuracy"]
    return out
