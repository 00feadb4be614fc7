"""disentanglement_lib's evaluation functions, on hier_metrics.

For scripts written against disentanglement_lib (``disentanglement_lib.evaluation.metrics``):
the same ``compute_*`` names, the same arguments (a ``ground_truth_data`` object, a
``representation_function``, an ``np.random.RandomState``, the gin-configured counts as
keyword arguments, whose defaults here are disentanglement_lib's study settings) and
the same result keys. Changing the imports is enough::

    # from disentanglement_lib.evaluation.metrics import mig, dci
    from hier_metrics import dlib_compat as mig, dlib_compat as dci
    scores = mig.compute_mig(ground_truth_data, representation_function, np.random.RandomState(0), num_train=10000)

``ground_truth_data`` is anything with disentanglement_lib's ground-truth interface:
``num_factors``, ``factors_num_values``, ``observation_shape``,
``sample_factors(num, random_state)``, ``sample_observations_from_factors(factors,
random_state)`` and ``sample(num, random_state)`` (``sample_observations`` is used
when present). Factors are discrete labels 0..m-1, as in disentanglement_lib. Every draw
from the data uses ``random_state`` in disentanglement_lib's order (training points in
batches of ``batch_size`` through ``sample``); the classifiers and splits inside the
metrics get a seed from a copy of it, so that it draws nothing disentanglement_lib would
not. Matrices are disentanglement_lib's ``(num_codes, num_points)`` where its functions
return them.

The numbers come from hier_metrics's own functions (named in each docstring), which
state the definitions and what they mean on hierarchical data; to score a hierbench
dataset use those directly with ``hier_datasets.ground_truth(name)``.
"""
from __future__ import annotations

import numpy as np

from hier_metrics.dci import dci
from hier_metrics.downstream import downstream_task, strong_downstream_task
from hier_metrics.fairness import fairness
from hier_metrics.interventional import beta_vae_score, factor_vae_score
from hier_metrics.irs import irs
from hier_metrics.mig import mig
from hier_metrics.modularity import explicitness, modularity
from hier_metrics.sap import sap
from hier_metrics.udr import udr
from hier_metrics.unsupervised import unsupervised_scores

__all__ = [
    "compute_beta_vae_sklearn",
    "compute_factor_vae",
    "compute_mig",
    "compute_sap",
    "compute_dci",
    "compute_modularity_explicitness",
    "compute_irs",
    "unsupervised_metrics",
    "compute_fairness",
    "compute_downstream_task",
    "compute_strong_downstream_task",
    "compute_udr_sklearn",
    "generate_batch_factor_code",
]

_GT_METHODS = ("sample_factors", "sample_observations_from_factors", "sample")


def _check_ground_truth_data(ground_truth_data) -> None:
    missing = [m for m in _GT_METHODS if not callable(getattr(ground_truth_data, m, None))]
    if missing or not hasattr(ground_truth_data, "factors_num_values"):
        raise ValueError(
            f"ground_truth_data must have disentanglement_lib's interface (factors_num_values, "
            f"{', '.join(_GT_METHODS)}); {type(ground_truth_data).__name__} lacks "
            f"{', '.join(missing) or 'factors_num_values'}"
        )


def _random_state(random_state) -> np.random.RandomState:
    if isinstance(random_state, np.random.RandomState):
        return random_state
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        return np.random.RandomState(int(random_state))
    raise TypeError(f"random_state must be an np.random.RandomState (or an integer seed), got {type(random_state).__name__}")


def _seed(random_state: np.random.RandomState) -> np.random.Generator:
    """A Generator for the metric's own randomness (splits, classifiers, shifts), seeded
    from a copy of ``random_state``, which is left where it is: ``random_state`` then
    draws exactly the data that disentanglement_lib draws with it."""
    copy = np.random.RandomState()
    copy.set_state(random_state.get_state())
    return np.random.default_rng(int(copy.randint(2**31 - 1)))


def _rows(array, num: int, name: str) -> np.ndarray:
    arr = np.asarray(array)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[0] != num:
        raise ValueError(f"{name} must return one row per point ({num}), got shape {arr.shape}")
    return arr


def generate_batch_factor_code(ground_truth_data, representation_function, num_points, random_state, batch_size):
    """``num_points`` samples drawn in batches of ``batch_size`` with
    ``ground_truth_data.sample``, encoded batch by batch; returns
    ``(codes, factors)`` as ``(num_codes, num_points)`` and ``(num_factors, num_points)``
    arrays (disentanglement_lib's utility of the same name)."""
    factors, codes = _draw(ground_truth_data, representation_function, num_points, random_state, batch_size)
    return codes.T, factors.T


def _draw(gtd, representation_function, num_points: int, random_state, batch_size: int):
    """(factors, codes) rows, drawn as :func:`generate_batch_factor_code` does."""
    if not callable(representation_function):
        raise TypeError(f"representation_function must be callable, got {type(representation_function).__name__}")
    num_points, batch_size = int(num_points), int(batch_size)
    if num_points < 1 or batch_size < 1:
        raise ValueError(f"num_points and batch_size must be positive, got {num_points} and {batch_size}")
    factors, codes = [], []
    for start in range(0, num_points, batch_size):
        m = min(batch_size, num_points - start)
        f, x = gtd.sample(m, random_state)
        factors.append(_rows(f, m, "ground_truth_data.sample"))
        codes.append(_rows(representation_function(x), m, "representation_function"))
    return np.concatenate(factors).astype(np.float64), np.concatenate(codes).astype(np.float64)


class _Process:
    """A disentanglement_lib ground-truth data as the generative process that
    hier_metrics's interventional scores call: its draws use the RandomState (the
    Generator they pass is not used), so the data come in disentanglement_lib's order."""

    def __init__(self, gtd, random_state: np.random.RandomState):
        self.gtd, self.random_state = gtd, random_state
        self.num_factors = len(gtd.factors_num_values)
        self._probed = False

    def sample_factors(self, n, rng=None):
        if not self._probed:  # the width probe of the interventional scores: no draw
            self._probed = True
            return np.zeros((n, self.num_factors))
        return np.asarray(self.gtd.sample_factors(n, self.random_state), dtype=np.float64)

    def observations_from_factors(self, factors, rng=None):
        return self.gtd.sample_observations_from_factors(np.asarray(factors).astype(np.int64), self.random_state)


def _all_discrete(num_factors: int) -> np.ndarray:
    """disentanglement_lib's factors are discrete labels: every column is categorical."""
    return np.arange(num_factors)


def compute_beta_vae_sklearn(ground_truth_data, representation_function, random_state, artifact_dir=None,
                             batch_size=64, num_train=10000, num_eval=5000):
    """beta-VAE score (:func:`hier_metrics.beta_vae_score`); ``{"train_accuracy", "eval_accuracy"}``."""
    _check_ground_truth_data(ground_truth_data)
    rs = _random_state(random_state)
    res = beta_vae_score(_Process(ground_truth_data, rs), representation_function, random_state=_seed(rs),
                         batch_size=batch_size, num_train=num_train, num_eval=num_eval)
    return {"train_accuracy": res["train_accuracy"], "eval_accuracy": res["eval_accuracy"]}


def compute_factor_vae(ground_truth_data, representation_function, random_state, artifact_dir=None,
                       batch_size=64, num_train=10000, num_eval=5000, num_variance_estimate=10000,
                       prune_threshold=0.05):
    """FactorVAE score (:func:`hier_metrics.factor_vae_score`; ``prune_threshold`` is
    disentanglement_lib's ``prune_dims.threshold``); ``{"train_accuracy",
    "eval_accuracy", "num_active_dims"}``."""
    _check_ground_truth_data(ground_truth_data)
    rs = _random_state(random_state)
    res = factor_vae_score(_Process(ground_truth_data, rs), representation_function, random_state=_seed(rs),
                           batch_size=batch_size, num_train=num_train, num_eval=num_eval,
                           num_variance_estimate=num_variance_estimate, prune_threshold=prune_threshold)
    return {k: res[k] for k in ("train_accuracy", "eval_accuracy", "num_active_dims")}


def compute_mig(ground_truth_data, representation_function, random_state, artifact_dir=None,
                num_train=10000, batch_size=16, num_bins=20):
    """MIG (:func:`hier_metrics.mig`, codes in ``num_bins`` histogram bins, the
    discretizer's setting); ``{"discrete_mig"}``."""
    _check_ground_truth_data(ground_truth_data)
    rs = _random_state(random_state)
    factors, codes = _draw(ground_truth_data, representation_function, num_train, rs, batch_size)
    res = mig(factors, codes, num_bins=num_bins, categorical=_all_discrete(factors.shape[1]))
    return {"discrete_mig": res["mig"]}


def _train_test(gtd, representation_function, rs, num_train, num_test, batch_size):
    f_train, z_train = _draw(gtd, representation_function, num_train, rs, batch_size)
    f_test, z_test = _draw(gtd, representation_function, num_test, rs, batch_size)
    return f_train, z_train, f_test, z_test


def compute_sap(ground_truth_data, representation_function, random_state, artifact_dir=None,
                num_train=10000, num_test=5000, batch_size=16, continuous_factors=False):
    """SAP (:func:`hier_metrics.sap`) on the ``num_train + num_test`` points, a
    ``num_test`` share held out; ``{"SAP_score"}``."""
    _check_ground_truth_data(ground_truth_data)
    rs = _random_state(random_state)
    f_train, z_train, f_test, z_test = _train_test(ground_truth_data, representation_function, rs, num_train, num_test,
                                                   batch_size)
    factors, codes = np.concatenate([f_train, f_test]), np.concatenate([z_train, z_test])
    categorical = np.zeros(0, dtype=np.int64) if continuous_factors else _all_discrete(factors.shape[1])
    res = sap(factors, codes, categorical=categorical, test_size=num_test / len(factors), random_state=_seed(rs))
    return {"SAP_score": res["sap"]}


def compute_dci(ground_truth_data, representation_function, random_state, artifact_dir=None,
                num_train=10000, num_test=5000, batch_size=16):
    """DCI (:func:`hier_metrics.dci`, boosted-tree classifiers) on the ``num_train +
    num_test`` points, a ``num_test`` share held out; ``{"informativeness_train",
    "informativeness_test", "disentanglement", "completeness"}``."""
    _check_ground_truth_data(ground_truth_data)
    rs = _random_state(random_state)
    f_train, z_train, f_test, z_test = _train_test(ground_truth_data, representation_function, rs, num_train, num_test,
                                                   batch_size)
    factors, codes = np.concatenate([f_train, f_test]), np.concatenate([z_train, z_test])
    res = dci(factors, codes, categorical=_all_discrete(factors.shape[1]), test_size=num_test / len(factors),
              random_state=_seed(rs))
    return {k: res[k] for k in ("informativeness_train", "informativeness_test", "disentanglement", "completeness")}


def compute_modularity_explicitness(ground_truth_data, representation_function, random_state, artifact_dir=None,
                                    num_train=10000, num_test=5000, batch_size=16, num_bins=20):
    """Modularity and explicitness (:func:`hier_metrics.modularity`,
    :func:`hier_metrics.explicitness`); ``{"modularity_score",
    "explicitness_score_train", "explicitness_score_test"}``."""
    _check_ground_truth_data(ground_truth_data)
    rs = _random_state(random_state)
    f_train, z_train, f_test, z_test = _train_test(ground_truth_data, representation_function, rs, num_train, num_test,
                                                   batch_size)
    cat = _all_discrete(f_train.shape[1])
    out = {"modularity_score": modularity(f_train, z_train, num_bins=num_bins, categorical=cat)["modularity_score"]}
    res = explicitness(f_train, z_train, test_factors=f_test, test_codes=z_test, categorical=cat, random_state=_seed(rs))
    out["explicitness_score_train"] = res["explicitness_score_train"]
    out["explicitness_score_test"] = res["explicitness_score_test"]
    return out


def compute_irs(ground_truth_data, representation_function, random_state, artifact_dir=None,
                diff_quantile=0.99, num_train=10000, batch_size=16, num_bins=20):
    """IRS (:func:`hier_metrics.irs`, factors in ``num_bins`` histogram bins as
    disentanglement_lib's discretizer); ``{"IRS", "num_active_dims"}``."""
    _check_ground_truth_data(ground_truth_data)
    rs = _random_state(random_state)
    factors, codes = _draw(ground_truth_data, representation_function, num_train, rs, batch_size)
    res = irs(factors, codes, diff_quantile=diff_quantile, num_bins=num_bins, categorical=np.zeros(0, dtype=np.int64))
    return {"IRS": res["IRS"], "num_active_dims": res["num_active_dims"]}


def unsupervised_metrics(ground_truth_data, representation_function, random_state, artifact_dir=None,
                         num_train=10000, batch_size=16, num_bins=20):
    """Gaussian total / Wasserstein correlation and mutual information score
    (:func:`hier_metrics.unsupervised_scores`), under disentanglement_lib's keys."""
    _check_ground_truth_data(ground_truth_data)
    rs = _random_state(random_state)
    _, codes = _draw(ground_truth_data, representation_function, num_train, rs, batch_size)
    res = unsupervised_scores(codes, num_bins=num_bins)
    res.pop("score")
    return res


def compute_fairness(ground_truth_data, representation_function, random_state, artifact_dir=None,
                     num_train=10000, num_test_points_per_class=100, batch_size=16, predictor="boosted_trees"):
    """Unfairness (:func:`hier_metrics.fairness`; ``predictor`` is disentanglement_lib's
    ``predictor.predictor_fn``: ``"boosted_trees"`` or ``"logistic_regression"``), under
    disentanglement_lib's ``mean_fairness:...`` / ``max_fairness:...`` keys."""
    _check_ground_truth_data(ground_truth_data)
    rs = _random_state(random_state)
    factors, codes = _draw(ground_truth_data, representation_function, num_train, rs, batch_size)
    values = [np.arange(m) for m in ground_truth_data.factors_num_values]
    res = fairness(_Process(ground_truth_data, rs), representation_function, factors=factors, codes=codes,
                   num_test_points_per_class=num_test_points_per_class, predictor=predictor, factor_values=values,
                   categorical=_all_discrete(factors.shape[1]), random_state=_seed(rs))
    res.pop("score")
    return res


def compute_downstream_task(ground_truth_data, representation_function, random_state, artifact_dir=None,
                            num_train=(10, 100, 1000, 10000), num_test=5000, batch_size=16,
                            predictor="logistic_regression"):
    """Downstream accuracies (:func:`hier_metrics.downstream_task`) for each training
    size in ``num_train``, each with a fresh training and test sample, under
    disentanglement_lib's ``"{size}:..."`` keys."""
    _check_ground_truth_data(ground_truth_data)
    rs = _random_state(random_state)
    out = {}
    for size in num_train:
        f_train, z_train, f_test, z_test = _train_test(ground_truth_data, representation_function, rs, size, num_test,
                                                       batch_size)
        res = downstream_task(f_train, z_train, test_factors=f_test, test_codes=z_test, predictor=predictor,
                              categorical=_all_discrete(f_train.shape[1]), random_state=_seed(rs))
        res.pop("score")
        out.update(res)
    return out


def compute_strong_downstream_task(ground_truth_data, representation_function, random_state, artifact_dir=None,
                                   num_train=(1000,), num_test=5000, n_experiment=10, predictor="boosted_trees"):
    """Downstream accuracy under covariate shift
    (:func:`hier_metrics.strong_downstream_task`), under disentanglement_lib's keys.
    The shifts (which factor, which value) are drawn from ``random_state`` too."""
    _check_ground_truth_data(ground_truth_data)
    rs = _random_state(random_state)
    process = _Process(ground_truth_data, rs)
    res = strong_downstream_task(
        process, representation_function, train_sizes=num_train, num_test=num_test, num_experiments=n_experiment,
        predictor=predictor, factor_values=[np.arange(m) for m in ground_truth_data.factors_num_values],
        categorical=_all_discrete(process.num_factors), random_state=_seed(rs),
    )
    res.pop("score")
    return res


def compute_udr_sklearn(ground_truth_data, representation_functions, random_state, batch_size=10,
                        num_data_points=1000, correlation_matrix="lasso", filter_low_kl=True,
                        include_raw_correlations=True, kl_filter_threshold=0.01):
    """UDR (:func:`hier_metrics.udr`) of several models: each of
    ``representation_functions`` maps observations to ``(codes, kl)`` with ``kl`` the
    (num_latents,) mean KL divergence per latent over the batch. Returns
    ``{"raw_correlations", "pairwise_disentanglement_scores", "model_scores"}``
    (the pair scores as an (M, M, 1) nested list)."""
    rs = _random_state(random_state)
    num_data_points, batch_size = int(num_data_points), int(batch_size)
    if batch_size < 1 or num_data_points < batch_size or num_data_points % batch_size:
        raise ValueError(f"num_data_points ({num_data_points}) must be a positive multiple of batch_size ({batch_size})")
    if len(representation_functions) < 2:
        raise ValueError("compute_udr_sklearn compares models: give at least two representation functions")
    reps = [[] for _ in representation_functions]
    kls = [[] for _ in representation_functions]
    for _ in range(num_data_points // batch_size):
        if callable(getattr(ground_truth_data, "sample_observations", None)):
            x = ground_truth_data.sample_observations(batch_size, rs)
        else:
            x = ground_truth_data.sample(batch_size, rs)[1]
        for m, fn in enumerate(representation_functions):
            codes, kl = fn(x)
            reps[m].append(_rows(codes, batch_size, "representation_functions[%d]" % m))
            kls[m].append(np.asarray(kl, dtype=np.float64).ravel())
    res = udr(
        [np.concatenate(r) for r in reps],
        kl=[np.mean(k, axis=0) for k in kls],
        correlation=correlation_matrix,
        kl_threshold=kl_filter_threshold if filter_low_kl else -np.inf,
        random_state=_seed(rs),
    )
    out = {}
    if include_raw_correlations:
        out["raw_correlations"] = res["raw_correlations"].tolist()
    out["pairwise_disentanglement_scores"] = res["pairwise_disentanglement_scores"][:, :, None].tolist()
    out["model_scores"] = res["model_scores"]
    return out
