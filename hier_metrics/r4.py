"""The R^4 and R^4_c correspondence scores (Ross & Doshi-Velez 2021, section 6.3).

For a ground-truth variable V and a learned dimension Z, univariate models are fitted
in both directions and the held-out coefficients of determination (accuracies for
categorical targets) combined by a geometric mean (eq. 2)::

    R^4(V <-> Z) = sqrt( max(0, R^2(V -> Z)) * max(0, R^2(Z -> V)) )

averaged over random train/test splits (5 by default). The "right representation"
score is R^4(V, Z) = mean_i max_j R^4(V_i <-> Z_j) (eq. 3): every ground-truth variable
needs one learned dimension it maps to one-to-one. Unlike SAP it allows non-linear
bijections and does not penalise a learned dimension that is duplicated.

R^4_c (eqs. 4-5) conditions on activity: a ground-truth variable may be matched by a
dimension of a learned group on the rows where both are active, or its active set may
be *tiled* by the option groups of a learned categorical. That makes it invariant to
"merging up" (one learned dimension standing for several mutually exclusive
variables) and "pushing down" (one variable duplicated into every branch).

Univariate fits use the binned estimator of ``hier_metrics._univariate`` (a per-bin
least-squares line for continuous targets, a per-bin one-split stump for categorical
ones), exact for one-to-one codes from 100 rows on, or the authors' boosted trees
(``estimator="gbt"``).

Constant factors: a factor that holds a single value over the evaluated rows (all
rows for R^4, its active rows for R^4_c) carries no information to recover. Its row
of :func:`r4_matrix` and its per-factor score are NaN, it is left out of the mean, and
a call where every factor is constant raises ``ValueError``.
"""
from __future__ import annotations

import numpy as np

from hier_metrics._univariate import ESTIMATORS, correspondence
from hier_metrics._validation import (
    check_array,
    check_forwarded_options,
    check_fraction,
    check_mask,
    check_not_all_constant,
    check_positive_int,
    check_random_state,
    check_same_rows,
    constant_columns,
    resolve_categorical,
)

__all__ = ["r4", "r4_matrix", "r4c"]


def _check_options(num_splits, test_size, estimator, num_bins):
    check_positive_int(num_splits, "num_splits")
    check_fraction(test_size, "test_size")
    if estimator not in ESTIMATORS:
        raise ValueError(f"estimator must be one of {list(ESTIMATORS)}, got {estimator!r}")
    if num_bins != "auto":
        check_positive_int(num_bins, "num_bins", minimum=2)


def r4_matrix(
    factors,
    codes,
    *,
    categorical="auto",
    num_splits: int = 5,
    test_size: float = 0.25,
    estimator: str = "binned",
    num_bins="auto",
    random_state=0,
) -> np.ndarray:
    """(num_factors, num_codes) matrix of R^4(V_i <-> Z_j) (paper eq. 2).

    Args:
      factors: (n, K) ground-truth variables. Columns flagged by ``categorical`` are
        predicted with classifiers and scored by accuracy; others by R^2.
      codes: (n, D) learned dimensions (treated as continuous).
      categorical: ``"auto"`` (non-negative integer columns with at most 10 distinct
        values, as in the authors' implementation), a boolean mask over the factor
        columns, column indices, or a ``Hierarchy``.
      num_splits, test_size: random train/test splits each score is averaged over.
      estimator: ``"binned"`` (fast; see ``hier_metrics._univariate``) or ``"gbt"``
        (histogram gradient-boosted trees on at most 5,000 training rows).
      num_bins: quantile bins of a continuous input for the binned estimator
        (``"auto"``: training rows // 150, clipped to 10..128). An input with at most
        max(bins, training rows // 10) distinct values gets one bin per value, and a
        categorical target with C classes at least 2 C bins.
      random_state: integer seed or numpy Generator; drives the splits.

    A constant factor's row is NaN; every factor constant raises ``ValueError``.
    """
    factors = check_array(factors, "factors")
    codes = check_array(codes, "codes")
    check_same_rows(factors=factors, codes=codes)
    _check_options(num_splits, test_size, estimator, num_bins)
    cat = resolve_categorical(factors, categorical, "factors")
    rng = check_random_state(random_state)
    constant = constant_columns(factors)
    check_not_all_constant(constant)
    out = np.full((factors.shape[1], codes.shape[1]), np.nan)
    out[~constant] = correspondence(
        factors[:, ~constant], codes, cat[~constant], np.zeros(codes.shape[1], dtype=bool), rng,
        num_splits=num_splits, test_size=test_size, num_bins=num_bins, estimator=estimator,
    )
    return out


def r4(factors, codes, *, random_state=0, **options) -> dict:
    """R^4 score (paper eq. 3): mean over factors of the best R^4 with any code.

    ``R^4(V, Z) = 1/|V| sum_i max_j R^4(V_i <-> Z_j)`` over the factors V_i that are not
    constant (a constant factor scores NaN and is left out).

    Args:
      factors: (n, K) ground-truth factors.
      codes: (n, D) learned codes.
      random_state: an integer seed or a numpy Generator (the train/test splits).
      **options: ``categorical``, ``num_splits``, ``test_size``, ``estimator``,
        ``num_bins``, as for :func:`r4_matrix`.

    Returns:
      ``{"score": float, "per_factor": (K,) array}``, values in [0, 1] (NaN for a
      constant factor).

    Raises:
      ValueError: arrays that are not finite 2-D arrays with the same number of rows,
        a bad option, or every factor constant.
      TypeError: ``random_state`` neither an integer nor a Generator.

    Example:
      Codes that are the factors permuted and warped one-to-one score 1; a code lost
      to noise scores 0 for its factor:

      >>> import numpy as np
      >>> rng = np.random.default_rng(0)
      >>> factors = rng.uniform(size=(300, 2))
      >>> codes = np.column_stack([np.exp(factors[:, 1]), 3 * factors[:, 0]])
      >>> round(r4(factors, codes)["score"], 3)
      1.0
      >>> r4(factors, np.column_stack([factors[:, 0], rng.uniform(size=300)]))["per_factor"].round(2)
      array([1., 0.])
    """
    check_forwarded_options(r4, options, r4_matrix, passed=("factors", "codes", "random_state"))
    matrix = r4_matrix(factors, codes, random_state=random_state, **options)
    per_factor = matrix.max(axis=1)
    return {"score": float(np.nanmean(per_factor)), "per_factor": per_factor}


def _group_tree(hierarchy):
    """(dims, categorical index or None, child nodes) for the root group, recursively."""

    def build(group):
        dims = [hierarchy.index(name) for name in group.continuous]
        if group.categorical is None:
            return dims, None, []
        cat = hierarchy.index(group.categorical.name)
        return dims + [cat], cat, [build(child) for _, child in group.categorical.options]

    return build(hierarchy.root)


def _code_activity(codes: np.ndarray, code_hierarchy) -> np.ndarray:
    try:
        paths = code_hierarchy.path_index(codes)
    except ValueError as err:
        raise ValueError(f"codes do not follow code_hierarchy: {err}") from None
    if np.any(paths < 0):
        row = int(np.flatnonzero(paths < 0)[0])
        raise ValueError(f"codes row {row} matches no path of code_hierarchy")
    return code_hierarchy.path_active[paths]


def r4c(
    factors,
    codes,
    *,
    factor_active,
    code_hierarchy=None,
    categorical="auto",
    num_splits: int = 5,
    test_size: float = 0.25,
    estimator: str = "binned",
    num_bins="auto",
    min_rows: int = 10,
    random_state=0,
) -> dict:
    """Conditional R^4_c score (paper eqs. 4-5) over a learned hierarchy.

    For a ground-truth variable V_i and a learned group g, with rows
    ``S = on(V_i) & on(g)``::

        R_c(V_i, g) = max( max_{j in g} R^4(V_i <-> Z_j | S),
                           sum_{g' option of g's categorical} |S & on(g')| / |S| * R_c(V_i, g') )

    and R^4_c = mean_i R_c(V_i, root). The weights are taken relative to S so that a
    variable tiled perfectly at any depth scores 1 (relative to on(V_i), as eq. 5 is
    printed, a tiling below the first level would be discounted twice). Groups with
    fewer than ``min_rows`` rows in S score 0.

    Constant factors: a factor that holds a single value on its active rows (or is
    never active) scores NaN and is left out of the mean. Inside the tiling, an option
    g' on whose rows ``S & on(g')`` the factor is constant has nothing left to recover
    there and is left out of the weighted sum (the weights are renormalised over the
    other options; with none left the tiling term is 0).

    Args:
      factors: (n, K) ground-truth variables; any values where inactive.
      codes: (n, D) learned variables in ``code_hierarchy``'s flat layout, encoded as
        the datasets' factors: a categorical column holds its option index + 1 where it
        is active and 0 where it is not, which decides which code dimensions are
        active (the true factors are a perfect code of their own hierarchy).
      factor_active: (n, K) bool, which factors are active in each row.
      code_hierarchy: the learned ``Hierarchy``; None (the default) for flat codes,
        one group of always-active dimensions, as the paper scores its flat baselines.
      categorical, num_splits, test_size, estimator, num_bins, random_state: as for
        :func:`r4_matrix`; code categoricals are always scored by accuracy.

    Returns:
      ``{"score": float, "per_factor": (K,) array}`` (NaN for a constant factor).

    Raises:
      ValueError: arrays of the wrong shape or with non-finite values, a
        ``code_hierarchy`` whose width differs from the codes', a bad option, or
        every factor constant on its active rows.
      TypeError: a ``code_hierarchy`` that is not a ``Hierarchy``, or ``random_state``
        neither an integer nor a Generator.

    Example:
      The true factors of Spaceshapes, scored as codes in their own hierarchy:

      >>> import hier_datasets
      >>> gt = hier_datasets.ground_truth("spaceshapes")
      >>> factors = gt.sample_factors(400, random_state=0)
      >>> h = gt.hierarchy
      >>> result = r4c(factors, factors, factor_active=gt.active(factors),
      ...              code_hierarchy=h, categorical=h)
      >>> round(result["score"], 3)
      1.0
    """
    factors = check_array(factors, "factors")
    codes = check_array(codes, "codes")
    check_same_rows(factors=factors, codes=codes)
    factor_active = check_mask(factor_active, "factor_active", factors.shape)
    if code_hierarchy is None:
        from hier_datasets.hierarchy import Hierarchy

        code_hierarchy = Hierarchy.flat(codes.shape[1])
    for attr in ("root", "index", "path_index", "path_active", "is_categorical", "num_dims"):
        if not hasattr(code_hierarchy, attr):
            raise TypeError(f"code_hierarchy must be a hier_datasets.Hierarchy, got {type(code_hierarchy).__name__}")
    if codes.shape[1] != code_hierarchy.num_dims:
        raise ValueError(
            f"codes must have one column per code_hierarchy dimension ({code_hierarchy.num_dims}: "
            f"{list(code_hierarchy.names)}), got {codes.shape[1]}"
        )
    _check_options(num_splits, test_size, estimator, num_bins)
    check_positive_int(min_rows, "min_rows", minimum=2)
    cat = resolve_categorical(factors, categorical, "factors", active=factor_active)
    constant = constant_columns(factors, factor_active)
    check_not_all_constant(constant, where=" on the rows where it is active")
    code_cat = np.asarray(code_hierarchy.is_categorical, dtype=bool)
    _code_activity(codes, code_hierarchy)
    rng = check_random_state(random_state)
    tree = _group_tree(code_hierarchy)
    options = dict(num_splits=num_splits, test_size=test_size, num_bins=num_bins, estimator=estimator)

    def score(i: int, node, rows: np.ndarray) -> float:
        dims, cat_index, children = node
        if rows.size < min_rows:
            return 0.0
        direct = 0.0
        if dims:
            pair = correspondence(
                factors[rows, i : i + 1], codes[rows][:, dims], cat[i : i + 1], code_cat[dims], rng, **options
            )
            direct = float(pair.max())
        tiled = 0.0
        if cat_index is not None and direct < 1.0:
            weight = 0
            for option, child in enumerate(children):
                sub = rows[codes[rows, cat_index] == option + 1]
                if sub.size and np.any(factors[sub, i] != factors[sub[0], i]):  # constant: left out
                    tiled += sub.size * score(i, child, sub)
                    weight += sub.size
            tiled = tiled / weight if weight else 0.0
        return max(direct, tiled)

    per_factor = np.array(
        [np.nan if constant[i] else score(i, tree, np.flatnonzero(factor_active[:, i])) for i in range(factors.shape[1])],
        dtype=np.float64,
    )
    return {"score": float(np.nanmean(per_factor)), "per_factor": per_factor}
