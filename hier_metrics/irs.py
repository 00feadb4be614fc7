"""Interventional robustness score (Suter et al. 2019), disentanglement_lib's estimator."""
from __future__ import annotations

import numbers

import numpy as np

from hier_metrics._factor_labels import factor_labels
from hier_metrics._validation import check_array, check_not_all_constant, check_same_rows, constant_columns

__all__ = ["irs"]


def irs(
    factors, codes, *, diff_quantile: float = 0.99, num_bins: int = 20, categorical="auto", factor_active=None
) -> dict:
    """Interventional robustness score (Suter et al. 2019, section 4, eqs. 5-9; the
    sample estimator of their section 5 as disentanglement_lib computes it).

    Factors enter as class labels (categorical ones keep their values, continuous ones
    are cut into ``num_bins`` equal-width bins; on discrete factors with at most
    ``num_bins`` values these are disentanglement_lib's histogram labels). For code j
    and factor k, with the rows sharing class v of factor k:

        PIDA_kj(v) = q-quantile over those rows of |z_j - mean(z_j | f_k = v)|
        EMPIDA_kj  = mean over the classes v of PIDA_kj(v)
        IRS_kj     = 1 - EMPIDA_kj / max_rows |z_j - mean(z_j)|

    (q = ``diff_quantile``; 1.0 is the paper's supremum). A code's score is
    ``max_k IRS_kj``: fixing its best factor leaves it nearly unchanged. The result is
    the mean of the codes' scores weighted by their largest deviation
    ``max |z_j - mean z_j|``. Codes constant over the rows are dropped first; with no
    code left the score is 0.

    On hierarchical data (with ``factor_active`` from ``ground_truth.active``):
    "inactive" is a class of each factor, so conditioning on a factor also conditions
    on its branch, and a code of a branch is robust to a factor that switches the
    branch off. The estimator conditions on observed values, which equals the paper's
    intervention only for independent factors (the paper's and disentanglement_lib's
    assumption); with nested factors read it as conditional robustness.

    Args:
      factors: (n, K) ground-truth factors; codes: (n, D) codes.
      diff_quantile: q in (0, 1].
      num_bins, categorical, factor_active: how factors become classes.

    Returns:
      ``{"score", "IRS", "num_active_dims", "disentanglement_scores", "irs_matrix",
      "max_deviations"}``: ``score`` = ``IRS``; the per-code scores, the
      (num_factors, num_active_dims) matrix and the deviations over the kept codes.

    Raises:
      ValueError: bad arrays or options, or every factor constant.

    Example:
      >>> import numpy as np
      >>> f = np.array([[0, 0], [0, 1], [1, 0], [1, 1]] * 5, dtype=float)
      >>> round(irs(f, f)["score"], 6), round(irs(f, f[:, ::-1])["score"], 6)
      (1.0, 1.0)
    """
    factors = check_array(factors, "factors")
    codes = check_array(codes, "codes")
    check_same_rows(factors=factors, codes=codes)
    if not isinstance(diff_quantile, numbers.Real) or not 0 < diff_quantile <= 1:
        raise ValueError(f"diff_quantile must be a number in (0, 1], got {diff_quantile!r}")
    labels = factor_labels(factors, categorical=categorical, num_bins=num_bins, factor_active=factor_active)
    constant = constant_columns(labels)
    check_not_all_constant(constant)
    labels = labels[:, ~constant]
    kept = codes.var(axis=0) > 0
    z = codes[:, kept]
    if not kept.any():
        return {"score": 0.0, "IRS": 0.0, "num_active_dims": 0, "disentanglement_scores": np.zeros(0),
                "irs_matrix": np.zeros((labels.shape[1], 0)), "max_deviations": np.zeros(0)}
    max_dev = np.abs(z - z.mean(axis=0)).max(axis=0)
    empida = np.zeros((labels.shape[1], z.shape[1]))
    for k in range(labels.shape[1]):
        classes = np.unique(labels[:, k])
        for v in classes:
            rows = z[labels[:, k] == v]
            empida[k] += np.percentile(np.abs(rows - rows.mean(axis=0)), 100 * diff_quantile, axis=0)
        empida[k] /= classes.size
    matrix = 1.0 - empida / max_dev
    per_code = matrix.max(axis=0)
    value = float(np.average(per_code, weights=max_dev))
    return {
        "score": value,
        "IRS": value,
        "num_active_dims": int(kept.sum()),
        "disentanglement_scores": per_code,
        "irs_matrix": matrix,
        "max_deviations": max_dev,
    }
