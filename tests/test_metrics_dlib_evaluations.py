"""Modularity / explicitness, IRS, unsupervised scores, downstream tasks, fairness and UDR:
exact values on hand-computed cases, a perfect code at the good end, an uninformative
one at the bad end, and clear errors on bad input."""
import numpy as np
import pytest

import hier_datasets
import hier_metrics as hm
from hier_metrics.fairness import fairness_scores, inter_group_fairness
from hier_metrics.modularity import modularity_from_mutual_information
from hier_metrics.udr import relative_strength

RNG = np.random.default_rng(0)
FACTORS = np.stack([RNG.integers(3, size=600), RNG.integers(4, size=600)], axis=1).astype(float)
NOISE = RNG.normal(size=(600, 2))


class Flat:
    """Two independent discrete factors; the observation is the factors themselves."""

    def sample_factors(self, n, rng):
        return np.stack([rng.integers(3, size=n), rng.integers(4, size=n)], axis=1).astype(float)

    def observations_from_factors(self, factors, rng):
        return np.asarray(factors, dtype=float)


# ------------------------------------------------------------------ modularity / explicitness
def test_modularity_from_mutual_information_exact():
    assert modularity_from_mutual_information([[1.0, 0.0], [0.0, 2.0]]) == 1.0
    # one code informing about two factors: squares (4, 1), delta = (5 - 4) / (4 * 1)
    assert modularity_from_mutual_information([[2.0], [1.0]]) == pytest.approx(0.75)
    assert modularity_from_mutual_information([[1.0], [1.0]]) == 0.0
    assert modularity_from_mutual_information([[0.0], [0.0]]) == 0.0  # an uninformative code


def test_modularity_perfect_and_mixed():
    assert hm.modularity(FACTORS, FACTORS)["score"] == pytest.approx(1.0, abs=1e-3)  # sample MI between factors
    mixed = np.column_stack([FACTORS.sum(axis=1), FACTORS.sum(axis=1)])
    assert hm.modularity(FACTORS, mixed)["score"] < 0.8
    assert set(hm.modularity(FACTORS, FACTORS)) == {"score", "modularity_score"}


def test_explicitness_perfect_and_random():
    perfect = hm.explicitness(FACTORS, FACTORS + 0.01 * NOISE)
    assert perfect["score"] == pytest.approx(1.0)
    assert set(perfect) == {"score", "explicitness_score_train", "explicitness_score_test"}
    assert abs(hm.explicitness(FACTORS, NOISE)["score"] - 0.5) < 0.1


def test_explicitness_with_a_test_sample():
    res = hm.explicitness(FACTORS[:400], FACTORS[:400], test_factors=FACTORS[400:], test_codes=FACTORS[400:])
    assert res["explicitness_score_test"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="both test_factors and test_codes"):
        hm.explicitness(FACTORS, FACTORS, test_factors=FACTORS)


# ------------------------------------------------------------------ IRS
def test_irs_exact_small_case():
    # one binary factor, one code 0,1,2,3: classes {0,1} and {2,3} deviate 0.5 from their
    # means, the code 1.5 at most from its mean: IRS = 1 - 0.5 / 1.5
    f = np.array([[0.0], [0.0], [1.0], [1.0]])
    z = np.array([[0.0], [1.0], [2.0], [3.0]])
    assert hm.irs(f, z, diff_quantile=1.0)["score"] == pytest.approx(2 / 3)


def test_irs_perfect_constant_and_errors():
    assert hm.irs(FACTORS, FACTORS)["score"] == pytest.approx(1.0)
    res = hm.irs(FACTORS, np.ones((600, 2)))
    assert res["score"] == 0.0 and res["num_active_dims"] == 0
    assert hm.irs(FACTORS, NOISE)["score"] < 0.5
    with pytest.raises(ValueError, match="diff_quantile"):
        hm.irs(FACTORS, FACTORS, diff_quantile=0)


# ------------------------------------------------------------------ unsupervised
def _with_covariance(cov):
    x = np.random.default_rng(1).normal(size=(500, len(cov)))
    x -= x.mean(axis=0)
    x = x @ np.linalg.inv(np.linalg.cholesky(np.cov(x, rowvar=False))).T  # sample covariance exactly I
    return x @ np.linalg.cholesky(cov).T


def test_gaussian_scores_exact():
    r = 0.6
    z = _with_covariance(np.array([[1.0, r], [r, 1.0]]))
    assert hm.gaussian_total_correlation(z) == pytest.approx(-0.5 * np.log(1 - r * r), abs=1e-10)
    expected = 4 - 2 * (np.sqrt(1 + r) + np.sqrt(1 - r))
    assert hm.gaussian_wasserstein_correlation(z) == pytest.approx(expected, abs=1e-10)
    assert hm.gaussian_wasserstein_correlation(z, normalize=True) == pytest.approx(expected / 2, abs=1e-10)
    independent = _with_covariance(np.diag([1.0, 4.0]))
    assert hm.gaussian_total_correlation(independent) == pytest.approx(0.0, abs=1e-10)
    assert hm.gaussian_wasserstein_correlation(independent) == pytest.approx(0.0, abs=1e-10)


def test_unsupervised_keys_duplicates_and_constant_codes():
    res = hm.unsupervised_scores(NOISE)
    assert set(res) == {"score", "gaussian_total_correlation", "gaussian_wasserstein_correlation",
                        "gaussian_wasserstein_correlation_norm", "mutual_info_score"}
    duplicated = np.column_stack([NOISE[:, 0], NOISE[:, 0]])
    assert hm.gaussian_total_correlation(duplicated) == np.inf
    assert hm.mutual_info_score(duplicated) > 2.0 > 4 * res["mutual_info_score"]
    # a constant code is independent of the rest: left out of the Gaussian scores
    assert hm.gaussian_total_correlation(np.column_stack([NOISE, np.ones(600)])) == pytest.approx(
        hm.gaussian_total_correlation(NOISE))
    with pytest.raises(ValueError, match="2-D"):
        hm.unsupervised_scores(NOISE[:, 0])


# ------------------------------------------------------------------ downstream
def test_downstream_perfect_random_and_keys():
    res = hm.downstream_task(FACTORS[:400], FACTORS[:400], test_factors=FACTORS[400:], test_codes=FACTORS[400:],
                             train_sizes=[50, 400], predictor="boosted_trees")
    assert res["score"] == res["400:mean_test_accuracy"] == pytest.approx(1.0)
    assert {"50:min_train_accuracy", "400:test_accuracy_factor_1"} <= set(res)
    bad = hm.downstream_task(FACTORS[:400], NOISE[:400], test_factors=FACTORS[400:], test_codes=NOISE[400:],
                             predictor="boosted_trees")
    assert bad["score"] < 0.45


def test_downstream_errors():
    with pytest.raises(ValueError, match="predictor"):
        hm.downstream_task(FACTORS, FACTORS, test_factors=FACTORS, test_codes=FACTORS, predictor="svm")
    with pytest.raises(ValueError, match="train_sizes"):
        hm.downstream_task(FACTORS, FACTORS, test_factors=FACTORS, test_codes=FACTORS, train_sizes=[10_000])
    with pytest.raises(ValueError, match="columns"):
        hm.downstream_task(FACTORS, FACTORS, test_factors=FACTORS[:, :1], test_codes=FACTORS)


# ------------------------------------------------------------------ fairness
def test_inter_group_fairness_exact():
    assert inter_group_fairness([[5, 5], [5, 5]]) == (0.0, 0.0)
    # value 0 predicts (10, 0), value 1 (5, 5); overall (0.75, 0.25): TV 0.25 each
    assert inter_group_fairness([[10, 5], [0, 5]]) == pytest.approx((0.25, 0.25))


def test_fairness_scores_keys():
    res = fairness_scores(np.array([[0.0, 0.2, 0.4], [0.1, 0.0, 0.3], [0.5, 0.6, 0.0]]), "mean_fairness")
    assert res["mean_fairness:pred0:sens2"] == 0.4
    assert res["mean_fairness:pred2:max_sens"] == 0.6
    assert res["mean_fairness:mean_pred:mean_sens"] == pytest.approx((0.3 + 0.2 + 0.55) / 3)
    assert res["mean_fairness:max_sens:max_pred"] == pytest.approx(0.6)


def test_fairness_perfect_and_entangled():
    kw = dict(num_train=300, num_test_points_per_class=30, predictor="boosted_trees", random_state=0)
    perfect = hm.fairness(Flat(), lambda x: x, **kw)
    assert perfect["score"] == 0.0
    entangled = hm.fairness(Flat(), lambda x: (x[:, :1] * 4 + x[:, 1:]) * np.ones((1, 2)), **kw)
    assert entangled["score"] == 0.0  # one-to-one code of both: still predictable
    lossy = hm.fairness(Flat(), lambda x: x.sum(axis=1, keepdims=True), **kw)
    assert lossy["score"] > 0.1
    with pytest.raises(ValueError, match="factor_values"):
        hm.fairness(Flat(), lambda x: x, factor_values=[[0, 1]], **kw)


@pytest.mark.slow  # about two minutes: every intervention redraws a hierarchical sample
def test_fairness_and_strong_downstream_on_a_hierarchy():
    gt = hier_datasets.ground_truth("chopsticks/depth2_either")
    encode = lambda series: series[:, [0, 21, 42, 63]]  # noqa: E731
    res = hm.fairness(gt, encode, num_train=200, num_test_points_per_class=5, num_bins=2,
                      predictor="logistic_regression")
    assert 0 <= res["score"] <= 1
    res = hm.strong_downstream_task(gt, encode, train_sizes=[100], num_test=100, num_experiments=1, num_bins=2,
                                    predictor="logistic_regression")
    assert 0 <= res["score"] <= 1 and "100:strong_generalization_gap" in res


def test_strong_downstream_perfect():
    res = hm.strong_downstream_task(Flat(), lambda x: x, train_sizes=[200], num_test=200, num_experiments=1)
    assert res["200:mean_test_accuracy"] == 1.0 and res["score"] == 1.0
    assert res["200:strong_generalization_gap"] == 0.0


# ------------------------------------------------------------------ UDR
def test_relative_strength_exact():
    assert relative_strength(np.eye(3)) == 1.0
    assert relative_strength(np.ones((2, 2))) == 0.5
    # columns: max^2 / sum = 1/1, 0/0 -> 0; rows: 1, 0 -> mean 0.5 both ways
    assert relative_strength([[1.0, 0.0], [0.0, 0.0]]) == 0.5


def test_udr_same_code_up_to_permutation_and_random():
    z = FACTORS + 0.01 * NOISE
    res = hm.udr([z, z[:, ::-1], 2 * z + 1])
    # the Lasso (alpha 0.1) shrinks each one-to-one coefficient to 0.9: max^2 / sum = 0.9
    assert res["model_scores"] == pytest.approx([0.9, 0.9, 0.9], abs=1e-6)
    assert res["pairwise_disentanglement_scores"].shape == (3, 3)
    assert res["raw_correlations"].shape == (3, 3, 2, 2)
    assert hm.udr([z, z[:, ::-1]], correlation="spearman")["model_scores"] == pytest.approx([1.0, 1.0], abs=0.05)
    spear = hm.udr([z, z[:, ::-1], NOISE], correlation="spearman")
    assert spear["model_scores"][2] < spear["model_scores"][0] - 0.3


def test_udr_errors():
    with pytest.raises(ValueError, match="at least two"):
        hm.udr([NOISE])
    with pytest.raises(ValueError, match="one shape"):
        hm.udr([NOISE, NOISE[:, :1]])
    with pytest.raises(ValueError, match="correlation"):
        hm.udr([NOISE, NOISE], correlation="pearson")
    with pytest.raises(ValueError, match="kl"):
        hm.udr([NOISE, NOISE], kl=[np.ones(2)])


# ------------------------------------------------------------------ common checks
@pytest.mark.parametrize("metric", [hm.modularity, hm.explicitness, hm.irs])
def test_bad_arrays_raise(metric):
    with pytest.raises(ValueError, match="same number of rows"):
        metric(FACTORS, FACTORS[:10])
    with pytest.raises(ValueError, match="NaN"):
        metric(FACTORS, np.full((600, 2), np.nan))
    with pytest.raises(ValueError, match="constant"):
        metric(np.zeros((600, 2)), FACTORS)


def test_hierarchical_factors_inactive_is_a_class():
    gt = hier_datasets.ground_truth("chopsticks/depth2_either")
    factors = gt.sample_factors(400, 0)
    active = gt.active(factors)
    res = hm.modularity(factors, factors, categorical=gt.hierarchy, factor_active=active)
    assert 0.5 < res["score"] <= 1.0
    assert hm.irs(factors, factors, categorical=gt.hierarchy, factor_active=active)["score"] > 0.9


def test_evaluate_runs_the_new_array_metrics_when_named():
    rng = np.random.default_rng(0)
    f = rng.integers(3, size=(300, 2)).astype(float)
    out = hm.evaluate_arrays(f, f, metrics=["modularity", "irs", "unsupervised", "explicitness"])
    assert out["modularity"] == pytest.approx(1.0, abs=1e-3) and out["irs"] == pytest.approx(1.0)
    assert out["explicitness_test"] == pytest.approx(1.0)
    assert "gaussian_total_correlation" in out
    assert "modularity" not in hm.evaluate_arrays(f, f, metrics=None, metric_options={"r4": {}})


def test_evaluate_runs_fairness_and_strong_downstream_when_named():
    out = hm.evaluate(
        lambda x: x, Flat(), metrics=["fairness", "strong_downstream"],
        metric_options={
            "fairness": {"num_train": 200, "num_test_points_per_class": 10},
            "strong_downstream": {"train_sizes": [100], "num_test": 100, "num_experiments": 1},
        },
    )
    assert out["fairness_score"] == 0.0 and out["strong_downstream_score"] == 1.0
    assert "fairness_max_fairness:pred1:sens0" in out and "strong_downstream_100:strong_generalization_gap" in out
