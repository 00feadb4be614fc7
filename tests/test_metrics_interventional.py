"""FactorVAE and beta-VAE scores, which intervene on the generative process."""
import numpy as np
import pytest

import hier_datasets
import hier_metrics as hm
from hier_metrics.interventional import _fixed_factor_batches, _Sampler

SMALL = dict(num_train=300, num_eval=200, batch_size=32)


class LinearGroundTruth:
    """Four independent factors on 10 levels, observed through a fixed invertible mix.

    It has no ``hierarchy``: any object with these two methods is a ground truth.
    """

    def __init__(self):
        q, _ = np.linalg.qr(np.random.default_rng(0).normal(size=(4, 4)))
        self.mix = q

    def sample_factors(self, n, rng):
        return np.random.default_rng(rng).integers(0, 10, size=(n, 4)) / 9.0

    def observations_from_factors(self, factors, rng):
        return factors @ self.mix


GT = LinearGroundTruth()


def perfect(obs):
    """Recovered factors, permuted and warped, plus one constant dimension."""
    f = obs @ GT.mix.T
    return np.column_stack([np.exp(f[:, 2]), -f[:, 0], np.full(len(f), 3.0), f[:, 3] ** 3 + f[:, 3], 2 * f[:, 1]])


def noise(obs):
    return np.random.default_rng(len(obs) + int(1e6 * abs(obs[0, 0]))).normal(size=(len(obs), 4))


def test_factor_vae_perfect_and_pruned_dimension():
    res = hm.factor_vae_score(GT, perfect, num_variance_estimate=2000, **SMALL)
    assert res["train_accuracy"] == 1.0 and res["eval_accuracy"] == 1.0
    # reference bug: num_active_dims counted every dimension (5); the constant one is pruned
    assert res["num_active_dims"] == 4


def test_factor_vae_random_codes_near_chance():
    res = hm.factor_vae_score(GT, noise, num_variance_estimate=2000, **SMALL)
    assert res["eval_accuracy"] < 0.5
    assert res["num_active_dims"] == 4


def test_factor_vae_no_active_dimension():
    res = hm.factor_vae_score(GT, lambda obs: np.zeros((len(obs), 3)), num_variance_estimate=100, **SMALL)
    assert res == {"train_accuracy": 0.0, "eval_accuracy": 0.0, "num_active_dims": 0}


def test_beta_vae_perfect_and_random():
    assert hm.beta_vae_score(GT, perfect, **SMALL)["eval_accuracy"] >= 0.95
    random = hm.beta_vae_score(GT, noise, **SMALL)
    assert random["eval_accuracy"] < 0.5
    assert set(random) == {"train_accuracy", "eval_accuracy"}


def test_same_seed_same_scores_on_a_hierarchical_dataset():
    gt = hier_datasets.ground_truth("chopsticks/depth2_either")
    # series -> continuous factors scaled to [-1, 1] (raw slopes are below the 0.05 pruning threshold)
    unmix = np.linalg.pinv(gt.basis) / np.where(gt.high > 0, gt.high, 1.0)

    def represent(series):
        return series @ unmix

    kw = dict(num_train=100, num_eval=50, batch_size=16)
    a = hm.factor_vae_score(gt, represent, num_variance_estimate=500, random_state=3, **kw)
    b = hm.factor_vae_score(gt, represent, num_variance_estimate=500, random_state=3, **kw)
    assert a == b and 0 <= a["eval_accuracy"] <= 1 and a["num_active_dims"] == 6
    c = hm.beta_vae_score(gt, represent, random_state=np.random.default_rng(3), **kw)
    assert c == hm.beta_vae_score(gt, represent, random_state=np.random.default_rng(3), **kw)
    assert c["eval_accuracy"] > 0.5


def test_batches_fix_a_factor_only_where_it_is_active():
    gt = hier_datasets.ground_truth("spaceshapes")
    h = gt.hierarchy
    sampler = _Sampler(gt, np.random.default_rng(0))
    for name in ("x", "phase", "jetlen", "shape", "jet"):
        k = h.index(name)
        ks = np.full(5, k)
        rows = _fixed_factor_batches(sampler, ks, 20).reshape(5, 20, -1)
        gt.validate_factors(rows.reshape(-1, h.num_dims))  # consistent with the hierarchy
        active = h.activity_mask(rows.reshape(-1, h.num_dims)).reshape(5, 20, -1)
        assert active[..., k].all(), name
        assert np.all(rows[..., k] == rows[:, :1, k]), name  # shared within each batch
        assert np.unique(rows[:, 0, k]).size > 1 or name == "jet", name  # differs between batches
        others = [j for j in range(h.num_dims) if j != k and not h.is_categorical[j] and active[..., j].all()]
        for j in others:
            assert np.unique(rows[0, :, j]).size > 1, (name, h.names[j])  # the rest varies
    jetlen = _fixed_factor_batches(sampler, np.full(3, h.index("jetlen")), 10)
    assert np.all(jetlen[:, h.index("shape")] == 2) and np.all(jetlen[:, h.index("jet")] == 1)


def test_bad_arguments():
    with pytest.raises(ValueError, match="ground_truth must provide"):
        hm.factor_vae_score(object(), perfect)
    with pytest.raises(ValueError, match="representation_function must be callable"):
        hm.beta_vae_score(GT, "encoder")
    with pytest.raises(ValueError, match="one row per observation"):
        hm.factor_vae_score(GT, lambda obs: obs[:-1], **SMALL)
    with pytest.raises(ValueError, match="NaN or infinite"):
        hm.beta_vae_score(GT, lambda obs: np.full(obs.shape, np.nan), **SMALL)
    with pytest.raises(ValueError, match="batch_size"):
        hm.beta_vae_score(GT, perfect, batch_size=1)
    with pytest.raises(ValueError, match="num_train"):
        hm.factor_vae_score(GT, perfect, num_train=0)
    with pytest.raises(ValueError, match="prune_threshold"):
        hm.factor_vae_score(GT, perfect, prune_threshold=-1.0)
    with pytest.raises(ValueError, match="random_state"):
        hm.factor_vae_score(GT, perfect, random_state=None)
