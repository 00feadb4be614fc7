"""Factors as class labels, for the metrics that classify or condition on factor values.

disentanglement_lib's factors are discrete labels; hierbench's may be continuous and,
on hierarchical data, inactive (held at 0). A categorical factor keeps its values (on
hierarchical data option + 1 where active, 0 where inactive, so "inactive" is a class
of its own). A continuous factor is cut into ``num_bins`` equal-width bins over the
rows where it is active (all rows without an activity mask), labels 1..num_bins, and
its inactive rows get the label 0. Without an activity mask the labels are the
histogram bins of :func:`hier_metrics.mig.histogram_discretize` shifted by one, the same
partition of the rows as disentanglement_lib's histogram discretiser.
"""
from __future__ import annotations

import numpy as np

from hier_metrics._validation import check_array, check_mask, check_positive_int, check_same_rows, resolve_categorical
from hier_metrics.mig import histogram_discretize

__all__ = ["factor_labels", "train_test_labels"]


def factor_labels(factors: np.ndarray, *, categorical="auto", num_bins: int = 20, factor_active=None) -> np.ndarray:
    """(n, K) int64 class labels of validated ``factors`` (see the module docstring)."""
    num_bins = check_positive_int(num_bins, "num_bins", minimum=2)
    active = None if factor_active is None else check_mask(factor_active, "factor_active", factors.shape)
    cat = resolve_categorical(factors, categorical, "factors", active=active)
    labels = np.zeros(factors.shape, dtype=np.int64)
    for j in range(factors.shape[1]):
        if cat[j]:
            labels[:, j] = factors[:, j].astype(np.int64)
            continue
        rows = slice(None) if active is None else active[:, j]
        column = factors[rows, j]
        if column.size:
            labels[rows, j] = histogram_discretize(column[:, None], num_bins)[:, 0] + 1
    return labels


def train_test_labels(
    factors, codes, test_factors, test_codes, *, categorical="auto", num_bins: int = 20, factor_active=None,
    test_factor_active=None,
):
    """Validated test arrays and the class labels of training and test factors, binned
    together (one set of bin edges): ``(test_codes, y_train, y_test)``. ``factors`` and
    ``codes`` are validated training arrays."""
    test_factors = check_array(test_factors, "test_factors", min_rows=1)
    test_codes = check_array(test_codes, "test_codes", min_rows=1)
    check_same_rows(test_factors=test_factors, test_codes=test_codes)
    if test_factors.shape[1] != factors.shape[1] or test_codes.shape[1] != codes.shape[1]:
        raise ValueError(
            f"test arrays must have the training arrays' columns: factors {factors.shape[1]}, codes "
            f"{codes.shape[1]}; got {test_factors.shape[1]} and {test_codes.shape[1]}"
        )
    active = None
    if factor_active is not None or test_factor_active is not None:
        active = np.concatenate([
            np.ones(factors.shape, bool) if factor_active is None else np.asarray(factor_active),
            np.ones(test_factors.shape, bool) if test_factor_active is None else np.asarray(test_factor_active),
        ])
    labels = factor_labels(
        np.concatenate([factors, test_factors]), categorical=categorical, num_bins=num_bins, factor_active=active
    )
    return test_codes, labels[: len(factors)], labels[len(factors):]
