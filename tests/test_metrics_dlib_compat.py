"""The disentanglement_lib drop-in: its compute_* functions on a disentanglement_lib-style
ground truth (written here, dSprites-like), a perfect code at the good end, a shuffled or
constant one not, and the same numbers as hier_metrics's functions on the same draws."""
import numpy as np
import pytest

import hier_metrics as hm
from hier_metrics import dlib_compat as dc


class SmallSprites:
    """disentanglement_lib's ground-truth interface: three discrete factors (shape,
    scale, x position), observations a fixed random map of them plus nuisance."""

    factors_num_values = [3, 4, 5]
    num_factors = 3
    observation_shape = [8]

    def __init__(self):
        self.mixing = np.random.RandomState(3).normal(size=(3, 6))

    def sample_factors(self, num, random_state):
        return np.stack([random_state.randint(m, size=num) for m in self.factors_num_values], axis=1)

    def sample_observations_from_factors(self, factors, random_state):
        scaled = np.asarray(factors, dtype=float) / (np.array(self.factors_num_values) - 1)
        return np.concatenate([scaled @ self.mixing, random_state.normal(size=(len(scaled), 2))], axis=1)

    def sample(self, num, random_state):
        factors = self.sample_factors(num, random_state)
        return factors, self.sample_observations_from_factors(factors, random_state)


DATA = SmallSprites()
UNMIX = np.linalg.pinv(DATA.mixing)


def perfect(x):
    # Rounded: unmixed codes land on the 20 histogram bins' edges (0.25, 0.5, 0.75) up to
    # round-off, whose sign (and so the bin) would depend on the other factors and the BLAS.
    return np.round(np.asarray(x)[:, :6] @ UNMIX, 9)


def constant(x):
    return np.zeros((len(x), 3))


def nuisance(x):
    return np.asarray(x)[:, 6:]


def shuffled(x):
    return perfect(x)[np.random.RandomState(len(x)).permutation(len(x))]


def rs():
    return np.random.RandomState(0)


def test_modularity_explicitness_keys_and_ends():
    good = dc.compute_modularity_explicitness(DATA, perfect, rs(), num_train=600, num_test=300)
    assert set(good) == {"modularity_score", "explicitness_score_train", "explicitness_score_test"}
    assert good["modularity_score"] > 0.99 and good["explicitness_score_test"] > 0.99
    bad = dc.compute_modularity_explicitness(DATA, shuffled, rs(), num_train=600, num_test=300)
    assert bad["explicitness_score_test"] < 0.6


def test_equals_our_functions_on_the_same_draws():
    state = rs()
    f_train, z_train = dc._draw(DATA, perfect, 600, state, 16)
    f_test, z_test = dc._draw(DATA, perfect, 300, state, 16)
    cat = np.arange(3)
    ours = hm.explicitness(f_train, z_train, test_factors=f_test, test_codes=z_test, categorical=cat,
                           random_state=dc._seed(state))
    res = dc.compute_modularity_explicitness(DATA, perfect, rs(), num_train=600, num_test=300)
    assert res["modularity_score"] == hm.modularity(f_train, z_train, categorical=cat)["score"]
    assert res["explicitness_score_test"] == ours["score"]
    f, z = dc._draw(DATA, perfect, 500, rs(), 16)
    assert dc.compute_irs(DATA, perfect, rs(), num_train=500)["IRS"] == hm.irs(f, z, categorical=[])["score"]
    assert dc.compute_mig(DATA, perfect, rs(), num_train=500)["discrete_mig"] == hm.mig(f, z, categorical=cat)["mig"]
    unsup = dc.unsupervised_metrics(DATA, perfect, rs(), num_train=500)
    assert unsup["gaussian_total_correlation"] == hm.gaussian_total_correlation(z)


def test_generate_batch_factor_code_orientation():
    codes, factors = dc.generate_batch_factor_code(DATA, perfect, 40, rs(), 16)
    assert codes.shape == (3, 40) and factors.shape == (3, 40)
    np.testing.assert_allclose(codes, factors / (np.array([2, 3, 4])[:, None]), atol=1e-9)


def test_irs_mig_unsupervised_ends():
    assert dc.compute_irs(DATA, perfect, rs(), num_train=500)["IRS"] == pytest.approx(1.0)
    assert dc.compute_irs(DATA, constant, rs(), num_train=500) == {"IRS": 0.0, "num_active_dims": 0}
    assert dc.compute_mig(DATA, perfect, rs(), num_train=500)["discrete_mig"] > 0.9
    assert dc.compute_mig(DATA, shuffled, rs(), num_train=500)["discrete_mig"] < 0.1
    unsup = dc.unsupervised_metrics(DATA, perfect, rs(), num_train=500)
    assert set(unsup) == {"gaussian_total_correlation", "gaussian_wasserstein_correlation",
                          "gaussian_wasserstein_correlation_norm", "mutual_info_score"}
    assert unsup["gaussian_total_correlation"] < 0.05


def test_sap_dci_downstream():
    assert dc.compute_sap(DATA, perfect, rs(), num_train=400, num_test=200)["SAP_score"] > 0.2
    assert dc.compute_sap(DATA, constant, rs(), num_train=400, num_test=200)["SAP_score"] == 0.0
    good = dc.compute_dci(DATA, perfect, rs(), num_train=300, num_test=150)
    assert set(good) == {"informativeness_train", "informativeness_test", "disentanglement", "completeness"}
    assert good["disentanglement"] > 0.9 and good["informativeness_test"] > 0.95
    res = dc.compute_downstream_task(DATA, perfect, rs(), num_train=[20, 200], num_test=200, predictor="boosted_trees")
    assert res["200:mean_test_accuracy"] == 1.0 and "20:test_accuracy_factor_2" in res
    res = dc.compute_downstream_task(DATA, nuisance, rs(), num_train=[200], num_test=200, predictor="boosted_trees")
    assert res["200:mean_test_accuracy"] < 0.5


def test_fairness_and_strong_downstream():
    res = dc.compute_fairness(DATA, perfect, rs(), num_train=300, num_test_points_per_class=20)
    assert res["mean_fairness:mean_pred:mean_sens"] == 0.0 and "max_fairness:pred0:sens1" in res
    lossy = dc.compute_fairness(DATA, lambda x: perfect(x).sum(axis=1, keepdims=True), rs(), num_train=300,
                                num_test_points_per_class=20)
    assert lossy["mean_fairness:mean_pred:mean_sens"] > 0.1
    res = dc.compute_strong_downstream_task(DATA, perfect, rs(), num_train=[200], num_test=200, n_experiment=1)
    assert set(res) == {"200:mean_train_accuracy", "200:mean_test_accuracy", "200:mean_strong_train_accuracy",
                        "200:mean_strong_test_accuracy", "200:strong_generalization_gap"}
    assert res["200:mean_strong_test_accuracy"] == 1.0


def test_vote_scores():
    good = dc.compute_factor_vae(DATA, perfect, rs(), num_train=300, num_eval=150, num_variance_estimate=500)
    assert good["eval_accuracy"] == 1.0 and good["num_active_dims"] == 3
    assert dc.compute_factor_vae(DATA, constant, rs(), num_train=300, num_eval=150,
                                 num_variance_estimate=500)["eval_accuracy"] == 0.0
    good = dc.compute_beta_vae_sklearn(DATA, perfect, rs(), batch_size=16, num_train=200, num_eval=100)
    assert set(good) == {"train_accuracy", "eval_accuracy"} and good["eval_accuracy"] == 1.0


def test_udr():
    def model(fn):
        return lambda x: (fn(x), np.ones(3))

    res = dc.compute_udr_sklearn(DATA, [model(perfect), model(lambda x: perfect(x)[:, ::-1]), model(nuisance3)],
                                 rs(), batch_size=10, num_data_points=300, correlation_matrix="spearman")
    assert np.shape(res["pairwise_disentanglement_scores"]) == (3, 3, 1)
    assert np.shape(res["raw_correlations"]) == (3, 3, 3, 3)
    assert res["model_scores"][2] < res["model_scores"][0]
    with pytest.raises(ValueError, match="multiple of batch_size"):
        dc.compute_udr_sklearn(DATA, [model(perfect)] * 2, rs(), batch_size=7, num_data_points=300)


def nuisance3(x):
    return np.column_stack([nuisance(x), nuisance(x)[:, 0] ** 2])


def test_bad_arguments():
    with pytest.raises(ValueError, match="ground_truth_data must have"):
        dc.compute_mig(object(), perfect, rs())
    with pytest.raises(TypeError, match="RandomState"):
        dc.compute_mig(DATA, perfect, np.random.default_rng(0))
    with pytest.raises(TypeError, match="callable"):
        dc.compute_irs(DATA, None, rs())
    with pytest.raises(ValueError, match="one row per point"):
        dc.compute_mig(DATA, lambda x: np.zeros((1, 3)), rs(), num_train=20)
