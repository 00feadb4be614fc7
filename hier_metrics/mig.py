"""Mutual information gap (Chen et al. 2018), estimated with histograms as in
disentanglement_lib.

Constant factors: a factor that holds a single value carries no information to recover
(its entropy is 0, so its normalised gap is undefined). It is left out of the mean over
factors, and a call where every factor is constant raises ``ValueError``. On inputs
without constant factors the values are disentanglement_lib's.
"""
from __future__ import annotations

import numpy as np

from hier_metrics._validation import (
    check_array,
    check_not_all_constant,
    check_positive_int,
    check_same_rows,
    constant_columns,
    resolve_categorical,
)

__all__ = ["mig", "histogram_discretize", "quantile_discretize", "discrete_mutual_info", "discrete_entropy"]


def histogram_discretize(values, num_bins: int = 20) -> np.ndarray:
    """Column-wise equal-width histogram bin index (0 .. num_bins-1) of a 2-D array."""
    values = check_array(values, "values", min_rows=1)
    num_bins = check_positive_int(num_bins, "num_bins")
    out = np.zeros(values.shape, dtype=np.int64)
    for j in range(values.shape[1]):
        edges = np.histogram_bin_edges(values[:, j], bins=num_bins)
        out[:, j] = np.clip(np.searchsorted(edges, values[:, j], side="right") - 1, 0, num_bins - 1)
    return out


def quantile_discretize(values, num_bins: int = 20) -> np.ndarray:
    """Column-wise equal-frequency bin index (0 .. num_bins-1): bins are quantiles.

    Unlike equal-width bins these are unchanged by any increasing transformation of a
    column, as mutual information itself is.
    """
    values = check_array(values, "values", min_rows=1)
    num_bins = check_positive_int(num_bins, "num_bins")
    out = np.zeros(values.shape, dtype=np.int64)
    for j in range(values.shape[1]):
        edges = np.unique(np.quantile(values[:, j], np.linspace(0, 1, num_bins + 1)[1:-1]))
        out[:, j] = np.searchsorted(edges, values[:, j], side="right")
    return out


def _labels(column: np.ndarray) -> tuple[np.ndarray, int]:
    uniques, ids = np.unique(column, return_inverse=True)
    return ids.ravel(), uniques.size


def discrete_entropy(labels) -> np.ndarray:
    """Entropy (nats) of each column of a 2-D array of discrete labels."""
    labels = np.asarray(labels)
    out = np.zeros(labels.shape[1])
    for j in range(labels.shape[1]):
        ids, size = _labels(labels[:, j])
        p = np.bincount(ids, minlength=size) / ids.size
        out[j] = -np.sum(p[p > 0] * np.log(p[p > 0]))
    return out


def discrete_mutual_info(factors_discrete, codes_discrete) -> np.ndarray:
    """(num_factors, num_codes) mutual information (nats) between discrete columns:
    entry ``[j, i]`` is ``I(code i; factor j)``.

    ``I(A; B) = sum_ab p(a, b) log(p(a, b) / (p(a) p(b)))`` from the joint histogram.
    """
    a_cols = [_labels(c) for c in np.asarray(codes_discrete).T]
    b_cols = [_labels(c) for c in np.asarray(factors_discrete).T]
    n = a_cols[0][0].size
    out = np.zeros((len(b_cols), len(a_cols)))
    for i, (a, na) in enumerate(a_cols):
        pa = np.bincount(a, minlength=na) / n
        for j, (b, nb) in enumerate(b_cols):
            joint = np.bincount(a * nb + b, minlength=na * nb).reshape(na, nb) / n
            pb = joint.sum(axis=0)
            nz = joint > 0
            out[j, i] = np.sum(joint[nz] * np.log(joint[nz] / np.outer(pa, pb)[nz]))
    return np.maximum(out, 0.0)


_DISCRETIZERS = {"histogram": histogram_discretize, "quantile": quantile_discretize}


def mig(factors, codes, *, num_bins: int = 20, categorical="auto", discretization: str = "histogram") -> dict:
    """Mutual information gap (Chen et al. 2018; disentanglement_lib's estimator).

    Codes are discretised into ``num_bins`` equal-width histogram bins, continuous
    factors likewise; categorical factors (see ``categorical``, as in
    :func:`hier_metrics.r4_matrix`) keep their values. ``discretization="quantile"``
    uses equal-frequency bins instead: equal-width bins of a code and of a continuous
    factor only line up when the code is an affine function of the factor, so with the
    default a non-linear but one-to-one code loses some information; quantile bins do
    not. (disentanglement_lib's factors are discrete labels, where this does not
    arise.) With ``I_jk`` the mutual
    information between factor k and code j and ``H_k`` the factor's entropy::

        MIG = mean_k (I_(1)k - I_(2)k) / H_k

    where I_(1)k >= I_(2)k are the two largest informations about factor k (the second
    is 0 when there is a single code). A constant factor (zero entropy) carries nothing
    to capture and is left out of the mean instead of being divided by zero; when
    every factor is constant the call raises ``ValueError``. (A factor that varies but
    falls into a single bin, possible with ``discretization="quantile"`` and a value
    that holds nearly every row, scores a gap of 0.)

    Args:
      factors: (n, K) ground-truth factors.
      codes: (n, D) learned codes.
      num_bins: histogram bins per code and continuous factor (>= 1).
      categorical: ``"auto"``, a boolean mask, column indices or a ``Hierarchy``.
      discretization: ``"histogram"`` (equal width) or ``"quantile"`` (equal frequency).

    Returns:
      ``{"score": float, "mig": float}`` in [0, 1], the same number under both keys.

    Raises:
      ValueError: arrays that are not finite 2-D arrays with the same number of rows,
        a bad ``num_bins`` or ``discretization``, or every factor constant.

    Example:
      Warped codes lose information to equal-width bins, not to quantile bins; a
      duplicated code halves the gap:

      >>> import numpy as np
      >>> rng = np.random.default_rng(0)
      >>> factors = rng.uniform(size=(300, 2))
      >>> codes = np.column_stack([np.exp(factors[:, 1]), 3 * factors[:, 0]])
      >>> round(mig(factors, codes)["score"], 2), round(mig(factors, codes, discretization="quantile")["score"], 2)
      (0.68, 0.77)
      >>> round(mig(factors, np.column_stack([codes, codes[:, :1]]))["score"], 2)
      0.38
    """
    factors = check_array(factors, "factors")
    codes = check_array(codes, "codes")
    check_same_rows(factors=factors, codes=codes)
    num_bins = check_positive_int(num_bins, "num_bins", minimum=2)
    if discretization not in _DISCRETIZERS:
        raise ValueError(f"discretization must be one of {sorted(_DISCRETIZERS)}, got {discretization!r}")
    cat = resolve_categorical(factors, categorical, "factors")
    constant = constant_columns(factors)
    check_not_all_constant(constant)
    discretize = _DISCRETIZERS[discretization]
    f_disc = discretize(factors, num_bins)
    f_disc[:, cat] = factors[:, cat].astype(np.int64)
    c_disc = discretize(codes, num_bins)
    info = discrete_mutual_info(f_disc, c_disc)
    entropy = discrete_entropy(f_disc)
    top = np.sort(info, axis=1)[:, ::-1]
    second = top[:, 1] if top.shape[1] > 1 else np.zeros(top.shape[0])
    keep = ~constant
    spread = entropy[keep] > 1e-12
    gaps = np.where(spread, (top[keep, 0] - second[keep]) / np.where(spread, entropy[keep], 1.0), 0.0)
    value = float(np.clip(gaps, 0.0, 1.0).mean())
    return {"score": value, "mig": value}
