"""One call for every metric, in the disentanglement_lib manner: over a registered
dataset with a representation function, or over arrays of factors and codes."""
from __future__ import annotations

from typing import Callable, Mapping, Sequence

import numpy as np

from hier_metrics._validation import (
    check_array,
    check_mask,
    check_positive_int,
    check_random_state,
    check_representation,
    check_same_rows,
)
from hier_metrics.dci import dci, dci_split
from hier_metrics.downstream import downstream_task, strong_downstream_task
from hier_metrics.fairness import fairness
from hier_metrics.interventional import _encode, beta_vae_score, factor_vae_score
from hier_metrics.irs import irs
from hier_metrics.mig import mig
from hier_metrics.modularity import explicitness, modularity
from hier_metrics.r4 import r4, r4c
from hier_metrics.sap import sap
from hier_metrics.unsupervised import unsupervised_scores

__all__ = [
    "evaluate", "evaluate_arrays", "ARRAY_METRICS", "INTERVENTIONAL_METRICS", "EXTRA_ARRAY_METRICS",
    "EXTRA_INTERVENTIONAL_METRICS",
]

#: metrics computed from (factors, codes) arrays, in the order they are run
ARRAY_METRICS = ("r4", "r4c", "dci", "dci_split", "mig", "sap")
#: metrics that need the generative process and a representation function
INTERVENTIONAL_METRICS = ("factor_vae", "beta_vae")
#: further array metrics (disentanglement_lib's other evaluations), run when named in ``metrics``
EXTRA_ARRAY_METRICS = ("modularity", "explicitness", "irs", "unsupervised", "downstream")
#: further interventional metrics, run when named in ``metrics``
EXTRA_INTERVENTIONAL_METRICS = ("fairness", "strong_downstream")
_ALL = ARRAY_METRICS + INTERVENTIONAL_METRICS + EXTRA_ARRAY_METRICS + EXTRA_INTERVENTIONAL_METRICS
_OPT_IN = EXTRA_ARRAY_METRICS + EXTRA_INTERVENTIONAL_METRICS


def _seeds(random_state) -> dict[str, int]:
    """One seed per metric (and the data), independent of which metrics are selected."""
    rng = check_random_state(random_state)
    values = rng.integers(2**31 - 1, size=len(_ALL) + 1)
    return dict(zip(("data",) + _ALL, (int(v) for v in values)))


def _select(metrics, allowed: Sequence[str], factor_groups) -> list[str]:
    """The metrics to run, in ``allowed`` order; by default every one that applies."""
    if metrics is None:
        chosen = [
            m for m in allowed if (m != "dci_split" or factor_groups is not None) and m not in _OPT_IN
        ]
    else:
        chosen = [metrics] if isinstance(metrics, str) else list(metrics)
    unknown = [m for m in chosen if m not in allowed]
    if unknown:
        raise ValueError(f"unknown metrics {unknown}; choose from {list(allowed)}")
    if "dci_split" in chosen and factor_groups is None:
        raise ValueError("metric 'dci_split' needs factor_groups")
    return [m for m in allowed if m in chosen]


def _options(metric_options, name: str) -> dict:
    if metric_options is None:
        return {}
    if not isinstance(metric_options, Mapping):
        raise ValueError("metric_options must map metric names to keyword dicts")
    unknown = set(metric_options) - set(_ALL)
    if unknown:
        raise ValueError(f"metric_options has unknown metrics {sorted(unknown)}; choose from {list(_ALL)}")
    return dict(metric_options.get(name, {}))


def _flatten(prefix: str, result: Mapping, out: dict) -> None:
    for key, value in result.items():
        name = f"{prefix}_{key}"
        if isinstance(value, Mapping):
            _flatten(name, value, out)
        elif isinstance(value, np.ndarray):
            out[name] = value.tolist()
        else:
            out[name] = value


def _check_progress(progress):
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be a callable taking a metric name, or None; got {type(progress).__name__}")
    return progress or (lambda name: None)


def _run_array_metrics(
    chosen, factors, codes, *, factor_active, code_hierarchy, categorical, factor_groups, factor_names, seeds, metric_options,
    progress=None,
) -> dict:
    out: dict = {}
    for name in chosen:
        if progress is not None:
            progress(name)
        kw = _options(metric_options, name)
        seed = seeds[name]
        if name == "r4":
            res = r4(factors, codes, categorical=categorical, random_state=seed, **kw)
            out["r4"], out["r4_per_factor"] = res["score"], res["per_factor"].tolist()
        elif name == "r4c":
            res = r4c(
                factors, codes, factor_active=factor_active, code_hierarchy=code_hierarchy,
                categorical=categorical, random_state=seed, **kw,
            )
            out["r4c"], out["r4c_per_factor"] = res["score"], res["per_factor"].tolist()
        elif name == "dci":
            res = dci(factors, codes, categorical=categorical, random_state=seed, **kw)
            res.pop("score")  # the same number as dci_disentanglement
            _flatten("dci", res, out)
        elif name == "dci_split":
            res = dci_split(
                factors, codes, groups=factor_groups, factor_names=factor_names,
                categorical=categorical, random_state=seed, **kw,
            )
            _flatten("dci", res, out)
        elif name == "mig":
            out["mig"] = mig(factors, codes, categorical=categorical, **kw)["mig"]
        elif name == "sap":
            out["sap"] = sap(factors, codes, categorical=categorical, random_state=seed, **kw)["sap"]
        elif name in ("modularity", "irs"):
            res = (modularity if name == "modularity" else irs)(
                factors, codes, categorical=categorical, factor_active=factor_active, **kw
            )
            out[name] = res["score"]
            if name == "irs":
                out["irs_num_active_dims"] = res["num_active_dims"]
        elif name == "explicitness":
            res = explicitness(
                factors, codes, categorical=categorical, factor_active=factor_active, random_state=seed, **kw
            )
            out["explicitness_train"], out["explicitness_test"] = res["explicitness_score_train"], res["score"]
        elif name == "unsupervised":
            res = unsupervised_scores(codes, **kw)
            res.pop("score")
            out.update(res)
        elif name == "downstream":
            half = len(factors) // 2  # train on the first half, test on the second
            res = downstream_task(
                factors[:half], codes[:half], test_factors=factors[half:], test_codes=codes[half:],
                factor_active=factor_active[:half], test_factor_active=factor_active[half:],
                categorical=categorical, random_state=seed, **kw,
            )
            res.pop("score")
            _flatten("downstream", res, out)
    return out


def evaluate_arrays(
    factors,
    codes,
    *,
    factor_active=None,
    code_hierarchy=None,
    categorical="auto",
    factor_groups: Mapping | None = None,
    factor_names: Sequence[str] | None = None,
    metrics=None,
    metric_options: Mapping | None = None,
    random_state=0,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """Every array-based metric on (factors, codes), as one flat dict.

    Args:
      factors: (n, K) ground-truth factors; codes: (n, D) learned codes.
      factor_active: (n, K) bool activity of the factors (needed for ``r4c``; default:
        every factor always active).
      code_hierarchy: the codes' ``Hierarchy`` for ``r4c``; None for flat codes.
      categorical: which factor columns are categorical (see :func:`hier_metrics.r4_matrix`).
      factor_groups: named factor groups (indices, or names with ``factor_names``);
        enables ``dci_split``.
      metrics: names from ``ARRAY_METRICS + EXTRA_ARRAY_METRICS``; default: ``r4``,
        ``dci``, ``mig``, ``sap``, ``r4c`` (flat codes without ``code_hierarchy``), plus
        ``dci_split`` with factor groups. ``EXTRA_ARRAY_METRICS`` run only when named:
        ``modularity``, ``explicitness`` (a random third held out), ``irs``,
        ``unsupervised`` (the codes alone) and ``downstream`` (trained on the first half
        of the rows, tested on the second).
      metric_options: per-metric keyword arguments, e.g. ``{"dci": {"test_size": 0.5}}``.
      random_state: integer seed or Generator; each metric gets its own derived seed,
        so a metric's value does not depend on which other metrics run.
      progress: called with each metric's name just before it runs (e.g. to advance a
        progress bar).

    Returns:
      e.g. ``{"r4": ..., "r4_per_factor": [...], "dci_disentanglement": ..., "mig": ..., "sap": ...}``.

    Raises:
      ValueError: arrays that are not finite 2-D arrays with the same number of rows,
        an unknown metric, or a metric's own error.
      TypeError: ``progress`` not callable, or ``random_state`` neither an integer
        nor a Generator.

    Example:
      >>> import numpy as np
      >>> rng = np.random.default_rng(0)
      >>> factors = rng.uniform(size=(300, 2))
      >>> codes = np.column_stack([np.exp(factors[:, 1]), 3 * factors[:, 0]])
      >>> scores = evaluate_arrays(factors, codes, metrics=["r4", "mig"])
      >>> sorted(scores), round(scores["r4"], 3), round(scores["mig"], 2)
      (['mig', 'r4', 'r4_per_factor'], 1.0, 0.68)
    """
    factors = check_array(factors, "factors")
    codes = check_array(codes, "codes")
    check_same_rows(factors=factors, codes=codes)
    progress = _check_progress(progress)
    chosen = _select(metrics, ARRAY_METRICS + EXTRA_ARRAY_METRICS, factor_groups)
    if factor_active is None:
        factor_active = np.ones(factors.shape, dtype=bool)
    factor_active = check_mask(factor_active, "factor_active", factors.shape)
    seeds = _seeds(random_state)
    return _run_array_metrics(
        chosen, factors, codes, factor_active=factor_active, code_hierarchy=code_hierarchy,
        categorical=categorical, factor_groups=factor_groups, factor_names=factor_names,
        seeds=seeds, metric_options=metric_options, progress=progress,
    )


def evaluate(
    representation_function: Callable,
    dataset,
    *,
    metrics=None,
    num_samples: int = 10000,
    random_state=0,
    code_hierarchy=None,
    factor_groups: Mapping | None = None,
    metric_options: Mapping | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """Score a representation on a registered dataset (disentanglement_lib style).

    ``num_samples`` fresh samples are drawn from ``hier_datasets.ground_truth(dataset)``
    (``dataset`` may also be a ground-truth object), encoded with
    ``representation_function(observations) -> (m, D) array``, and scored with every
    array metric (factor activity and categorical factors come from the dataset's
    hierarchy); the interventional FactorVAE and beta-VAE scores use the generative
    process directly.

    Args:
      metrics: names from ``ARRAY_METRICS + INTERVENTIONAL_METRICS`` and the opt-in
        ``EXTRA_ARRAY_METRICS + EXTRA_INTERVENTIONAL_METRICS`` (``fairness``,
        ``strong_downstream``: slow with their defaults, which fit boosted trees); default:
        all of the first two that apply (``dci_split`` needs ``factor_groups``).
      metric_options: per-metric keyword arguments, e.g.
        ``{"factor_vae": {"num_train": 1000, "num_eval": 500}}``.
      progress: called with each metric's name just before it runs.

    Returns:
      one flat dict, keys as in :func:`evaluate_arrays` plus
      ``factor_vae_train_accuracy``, ``factor_vae_eval_accuracy``,
      ``factor_vae_num_active_dims``, ``factor_vae_pruned_codes``, ``beta_vae_train_accuracy``,
      ``beta_vae_eval_accuracy``, and ``dataset``, ``num_samples``.

    Raises:
      ValueError: an unknown dataset or metric, too few samples, or a metric's own
        error.
      TypeError: a representation or ``progress`` that is not callable, or
        ``random_state`` neither an integer nor a Generator.

    Example:
      >>> scores = evaluate(lambda series: series[:, [0, 63]], "chopsticks/depth2_inter", metrics=["r4", "mig"],
      ...                   num_samples=500)
      >>> scores["dataset"], scores["num_samples"], round(scores["r4_per_factor"][0], 3)
      ('chopsticks/depth2_inter', 500, 1.0)
    """
    check_representation(representation_function, dataset, "evaluate(representation_function, dataset, ...)")
    num_samples = check_positive_int(num_samples, "num_samples", minimum=3)
    progress = _check_progress(progress)
    if isinstance(dataset, str):
        import hier_datasets

        gt = hier_datasets.ground_truth(dataset)
    elif callable(getattr(dataset, "sample_factors", None)):
        gt = dataset
    else:
        raise ValueError(f"dataset must be a registered dataset name or a ground-truth object, got {dataset!r}")
    seeds = _seeds(random_state)
    chosen = _select(metrics, _ALL, factor_groups)
    out: dict = {"dataset": getattr(gt, "name", str(dataset)), "num_samples": num_samples}
    array_chosen = [m for m in chosen if m in ARRAY_METRICS + EXTRA_ARRAY_METRICS]
    if array_chosen:
        data_rng = np.random.default_rng(seeds["data"])
        factors = np.asarray(gt.sample_factors(num_samples, data_rng), dtype=np.float64)
        codes = _encode(gt, representation_function, factors, data_rng)
        hierarchy = getattr(gt, "hierarchy", None)
        if hierarchy is not None:
            active, categorical = hierarchy.activity_mask(factors), hierarchy
        else:
            active, categorical = np.ones(factors.shape, dtype=bool), "auto"
        names = getattr(gt, "factor_names", None)
        out.update(
            _run_array_metrics(
                array_chosen, factors, codes, factor_active=active, code_hierarchy=code_hierarchy,
                categorical=categorical, factor_groups=factor_groups,
                factor_names=list(names) if names is not None else None,
                seeds=seeds, metric_options=metric_options, progress=progress,
            )
        )
    if "factor_vae" in chosen:
        progress("factor_vae")
        res = factor_vae_score(
            gt, representation_function, random_state=seeds["factor_vae"], **_options(metric_options, "factor_vae")
        )
        _flatten("factor_vae", res, out)
    if "beta_vae" in chosen:
        progress("beta_vae")
        res = beta_vae_score(
            gt, representation_function, random_state=seeds["beta_vae"], **_options(metric_options, "beta_vae")
        )
        _flatten("beta_vae", res, out)
    for name, fn in (("fairness", fairness), ("strong_downstream", strong_downstream_task)):
        if name in chosen:
            progress(name)
            res = fn(gt, representation_function, random_state=seeds[name], **_options(metric_options, name))
            _flatten(name, res, out)
    return out
