"""Fairness of predictions made from a representation (Locatello et al. 2019, "On the
fairness of disentangled representations", section 4): how much the prediction of one
factor changes when another (the sensitive one) is intervened on."""
from __future__ import annotations

import numpy as np

from hier_metrics._factor_labels import factor_labels
from hier_metrics._validation import check_array, check_positive_int, check_random_state, check_same_rows
from hier_metrics.downstream import check_interventional_call, make_predictor, quiet_fits
from hier_metrics.interventional import FactorSampler, _encode

__all__ = ["fairness", "fairness_scores", "inter_group_fairness", "intervention_values"]


def inter_group_fairness(counts) -> tuple[float, float]:
    """Mean and maximum total variation between the prediction distribution of each
    sensitive value and the overall one.

    ``counts[a, c]``: how often class a was predicted when the sensitive factor was set
    to its value c. With p(a) the overall distribution and p(a | c) each column's:
    ``TV_c = sum_a |p(a | c) - p(a)| / 2``; mean weighted by the columns' counts, and max.
    A value with no prediction is left out.

    >>> inter_group_fairness([[5, 5], [5, 5]])
    (0.0, 0.0)
    >>> inter_group_fairness([[10, 0], [0, 10]])
    (0.5, 0.5)
    """
    counts = np.asarray(counts, dtype=np.float64)
    if counts.ndim != 2 or counts.size == 0 or np.any(counts < 0) or counts.sum() == 0:
        raise ValueError("counts must be a non-empty 2-D array of non-negative counts, not all 0")
    per_value = counts.sum(axis=0)
    used = per_value > 0
    overall = counts.sum(axis=1) / counts.sum()
    tv = np.abs(counts[:, used] / per_value[used] - overall[:, None]).sum(axis=0) / 2
    return float(np.sum(tv * per_value[used]) / per_value.sum()), float(tv.max())


def fairness_scores(matrix, prefix: str) -> dict:
    """Every aggregate of a (num_factors, num_factors) unfairness matrix (row: predicted
    factor, column: sensitive factor; the diagonal is not used), under
    disentanglement_lib's keys: ``"{prefix}:pred{i}:sens{j}"``, per predicted factor
    ``":pred{i}:mean_sens"`` / ``":max_sens"``, per sensitive factor
    ``":sens{j}:mean_pred"`` / ``":max_pred"``, and the eight overall aggregates
    ``":mean_sens:mean_pred"`` ... ``":max_pred:max_sens"`` (the first named is the outer
    aggregate)."""
    m = np.asarray(matrix, dtype=np.float64)
    k = m.shape[0]
    off = ~np.eye(k, dtype=bool)
    out = {f"{prefix}:pred{i}:sens{j}": float(m[i, j]) for i in range(k) for j in range(k) if i != j}
    rows = [m[i, off[i]] for i in range(k)]
    cols = [m[off[:, j], j] for j in range(k)]
    for i, r in enumerate(rows):
        out[f"{prefix}:pred{i}:mean_sens"], out[f"{prefix}:pred{i}:max_sens"] = float(r.mean()), float(r.max())
    for j, c in enumerate(cols):
        out[f"{prefix}:sens{j}:mean_pred"], out[f"{prefix}:sens{j}:max_pred"] = float(c.mean()), float(c.max())
    col_mean, col_max = np.array([c.mean() for c in cols]), np.array([c.max() for c in cols])
    row_mean, row_max = np.array([r.mean() for r in rows]), np.array([r.max() for r in rows])
    for name, outer in (("mean_sens", np.mean), ("max_sens", np.max)):
        out[f"{prefix}:{name}:mean_pred"] = float(outer(col_mean))
        out[f"{prefix}:{name}:max_pred"] = float(outer(col_max))
    for name, outer in (("mean_pred", np.mean), ("max_pred", np.max)):
        out[f"{prefix}:{name}:mean_sens"] = float(outer(row_mean))
        out[f"{prefix}:{name}:max_sens"] = float(outer(row_max))
    return out


def intervention_values(factors: np.ndarray, hierarchy=None, *, num_bins: int = 20) -> list[np.ndarray]:
    """Values to set each factor to in an intervention: a categorical's option values
    (option + 1 on hierarchical data, from ``hierarchy``), a factor with at most
    ``num_bins`` distinct values in ``factors`` those values, any other the centres of
    ``num_bins`` equal-width bins over its values where it is nonzero (active)."""
    out = []
    for j in range(factors.shape[1]):
        if hierarchy is not None and hierarchy.is_categorical[j]:
            out.append(np.arange(1, hierarchy.num_options[j] + 1, dtype=np.float64))
            continue
        column = factors[:, j]
        values = np.unique(column)
        if values.size <= num_bins:
            out.append(values)
            continue
        if hierarchy is not None:
            column = column[column != 0]
        edges = np.histogram_bin_edges(column, bins=num_bins)
        out.append((edges[:-1] + edges[1:]) / 2)
    return out


def fairness(
    ground_truth,
    representation_function,
    *,
    num_train: int = 10000,
    num_test_points_per_class: int = 100,
    predictor: str = "boosted_trees",
    factor_values=None,
    factors=None,
    codes=None,
    num_bins: int = 20,
    categorical="auto",
    random_state=0,
) -> dict:
    """Unfairness of predictions from the codes (Locatello et al. 2019, fairness paper, section 4).

    For each target factor i a classifier (``predictor``, as for
    :func:`hier_metrics.downstream_task`) learns its class from the codes of
    ``num_train`` samples. For each sensitive factor j != i, ``num_test_points_per_class``
    factor rows are drawn and factor j set in turn to each of its values (an
    intervention); the classifier's predictions for each value are counted and the
    total variation from the overall prediction distribution
    (:func:`inter_group_fairness`) gives a mean and a max unfairness for (i, j).
    0 means the prediction of i does not depend on j. The headline ``score`` is
    ``mean_fairness:mean_pred:mean_sens`` (the paper's section 4 number).

    On hierarchical data (a ground truth with a ``hierarchy`` and ``sample_factors(...,
    fixed=...)``): the intervention on j draws from j's population (where it is
    active) with j fixed and what depends on j drawn given it, so each value has
    its own rows; an intervention on a categorical switches branches, so the
    prediction of a factor of a switched branch changes by design ("inactive" is one
    of its classes). On a flat ground truth the same rows are reused with column j
    overwritten, disentanglement_lib's procedure.

    Args:
      ground_truth: ``hier_datasets.ground_truth(name)`` or any object with
        ``sample_factors(n, rng)`` and ``observations_from_factors(factors, rng)``.
      representation_function: ``observations -> (m, D) codes``.
      num_train, num_test_points_per_class: sample sizes (disentanglement_lib's
        study: 10,000 and 100).
      factor_values: the values of each factor to intervene at; default
        :func:`intervention_values` of the training factors.
      factors, codes: training rows already drawn (then ``num_train`` is unused).
      num_bins: bins of continuous factors as classes and as intervention values.
      categorical: which factors are categorical when the ground truth has no
        ``hierarchy`` (``"auto"``, a mask or column indices).
      random_state: integer seed or Generator for every draw.

    Returns:
      ``score`` and every key of :func:`fairness_scores` for ``mean_fairness`` and
      ``max_fairness``.

    Raises:
      ValueError: a bad count, predictor or value list, or a ground truth or
        representation that does not give what is described above.
    """
    check_interventional_call(representation_function, predictor)
    check_positive_int(num_test_points_per_class, "num_test_points_per_class")
    rng = check_random_state(random_state)
    sampler = FactorSampler(ground_truth, rng)
    hierarchy = getattr(ground_truth, "hierarchy", None)
    if (factors is None) != (codes is None):
        raise ValueError("give both factors and codes (training rows already drawn), or neither")
    if factors is None:
        check_positive_int(num_train, "num_train", minimum=2)
        factors = sampler.draw(None, num_train)
        codes = _encode(ground_truth, representation_function, factors, rng)
    else:
        factors, codes = check_array(factors, "factors"), check_array(codes, "codes")
        check_same_rows(factors=factors, codes=codes)
    k = factors.shape[1]
    if factor_values is None:
        factor_values = intervention_values(factors, hierarchy, num_bins=num_bins)
    factor_values = [np.asarray(v, dtype=np.float64).ravel() for v in factor_values]
    if len(factor_values) != k or any(v.size == 0 for v in factor_values):
        raise ValueError(f"factor_values must give a non-empty list of values for each of the {k} factors")
    active = hierarchy.activity_mask(factors) if hierarchy is not None else None
    if hierarchy is not None:
        categorical = hierarchy
    labels = factor_labels(factors, categorical=categorical, num_bins=num_bins, factor_active=active)
    nested = sampler.intervenes and hierarchy is not None
    mean_fair, max_fair = np.zeros((k, k)), np.zeros((k, k))
    for i in range(k):
        if np.unique(labels[:, i]).size < 2:
            continue  # a constant target: every prediction is the same, unfairness 0
        model = make_predictor(predictor, int(rng.integers(2**31 - 1)))
        with quiet_fits():
            model.fit(codes, labels[:, i])
        for j in range(k):
            if i == j:
                continue
            original = None if nested else sampler.draw(None, num_test_points_per_class)
            counts = np.zeros((int(labels[:, i].max()) + 1, factor_values[j].size), dtype=np.int64)
            for c, value in enumerate(factor_values[j]):
                if original is None:
                    rows = sampler.draw(j, num_test_points_per_class, np.full(num_test_points_per_class, value))
                else:
                    rows = original.copy()
                    rows[:, j] = value
                predictions = model.predict(_encode(ground_truth, representation_function, rows, rng))
                counts[:, c] = np.bincount(predictions.astype(np.int64), minlength=counts.shape[0])[: counts.shape[0]]
            mean_fair[i, j], max_fair[i, j] = inter_group_fairness(counts)
    out = {"score": 0.0}
    out.update(fairness_scores(mean_fair, "mean_fairness"))
    out.update(fairness_scores(max_fair, "max_fairness"))
    out["score"] = out["mean_fairness:mean_pred:mean_sens"]
    return out
