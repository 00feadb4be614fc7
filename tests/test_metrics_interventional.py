"""FactorVAE and beta-VAE scores, which intervene on the generative process."""
import numpy as np
import pytest

import hier_datasets
import hier_metrics as hm
from hier_metrics.interventional import FactorSampler, _fixed_factor_batches
from hierbench.datasets import dataset_names

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
    with pytest.warns(UserWarning, match=r"left out codes \[2\].*standardize=True"):
        res = hm.factor_vae_score(GT, perfect, num_variance_estimate=2000, **SMALL)
    assert res["train_accuracy"] == 1.0 and res["eval_accuracy"] == 1.0
    # reference bug: num_active_dims counted every dimension (5); the constant one is pruned
    assert res["num_active_dims"] == 4 and res["pruned_codes"] == [2]


def test_factor_vae_random_codes_near_chance():
    res = hm.factor_vae_score(GT, noise, num_variance_estimate=2000, **SMALL)
    assert res["eval_accuracy"] < 0.5
    assert res["num_active_dims"] == 4


def test_factor_vae_no_active_dimension():
    with pytest.warns(UserWarning, match=r"left out codes \[0, 1, 2\]"):
        res = hm.factor_vae_score(GT, lambda obs: np.zeros((len(obs), 3)), num_variance_estimate=100, **SMALL)
    assert res == {"score": 0.0, "train_accuracy": 0.0, "eval_accuracy": 0.0, "num_active_dims": 0,
                   "pruned_codes": [0, 1, 2]}


def test_beta_vae_perfect_and_random():
    assert hm.beta_vae_score(GT, perfect, **SMALL)["eval_accuracy"] >= 0.95
    random = hm.beta_vae_score(GT, noise, **SMALL)
    assert random["eval_accuracy"] < 0.5
    assert set(random) == {"score", "train_accuracy", "eval_accuracy"}
    assert random["score"] == random["eval_accuracy"]


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
    assert c["eval_accuracy"] > 3 / 9  # three times chance (9 factors; categoricals are not encoded)


def test_batches_fix_a_factor_only_where_it_is_active():
    gt = hier_datasets.ground_truth("spaceshapes")
    h = gt.hierarchy
    sampler = FactorSampler(gt, np.random.default_rng(0))
    for name in ("x", "phase", "jetlen", "shape", "jet"):
        k = h.index(name)
        ks = np.full(5, k)
        rows = _fixed_factor_batches(sampler, ks, 20).reshape(5, 20, -1)
        gt.validate_factors(rows.reshape(-1, h.num_dims))  # consistent with the hierarchy
        active = gt.active(rows.reshape(-1, h.num_dims)).reshape(5, 20, -1)
        assert active[..., k].all(), name
        assert np.all(rows[..., k] == rows[:, :1, k]), name  # shared within each batch
        assert np.unique(rows[:, 0, k]).size > 1 or name == "jet", name  # differs between batches
        others = [j for j in range(h.num_dims) if j != k and not h.is_categorical[j] and active[..., j].all()]
        for j in others:
            assert np.unique(rows[0, :, j]).size > 1, (name, h.names[j])  # the rest varies
    jetlen = _fixed_factor_batches(sampler, np.full(3, h.index("jetlen")), 10)
    # categoricals hold option index + 1: ship is 3, jet is 2
    assert np.all(jetlen[:, h.index("shape")] == 3) and np.all(jetlen[:, h.index("jet")] == 2)


class Recorder:
    """A flat ground truth that records every batch of factors the metric encodes."""

    def __init__(self, gt):
        self.gt, self.factors = gt, []

    def sample_factors(self, n, rng):
        return self.gt.sample_factors(n, rng)

    def observations_from_factors(self, factors, rng):
        self.factors.append(np.array(factors))
        return self.gt.observations_from_factors(factors, rng)


def test_factor_vae_equals_disentanglement_libs_procedure_on_flat_data():
    """Replay the recorded draws through disentanglement_lib's written-out vote."""
    rec, batch = Recorder(GT), 32
    res = hm.factor_vae_score(rec, noise, num_variance_estimate=500, **SMALL)
    population = np.concatenate(rec.factors[:1])
    assert len(population) == 500
    global_var = np.var(noise(GT.observations_from_factors(population, 0)), axis=0, ddof=1)
    active = np.sqrt(global_var) >= 0.05
    votes = []
    for chunk in rec.factors[1:]:
        z = noise(GT.observations_from_factors(chunk, 0)).reshape(-1, batch, 4)
        for rows, codes in zip(chunk.reshape(-1, batch, 4), z):
            k = int(np.flatnonzero(np.ptp(rows, axis=0) == 0)[0])
            votes.append((k, np.argmin(np.var(codes, axis=0, ddof=1)[active] / global_var[active])))
    votes = np.array(votes)
    table = np.zeros((4, int(active.sum())), dtype=np.int64)
    np.add.at(table, (votes[:300, 0], votes[:300, 1]), 1)
    classifier = np.argmax(table, axis=0)
    train = np.mean(classifier[votes[:300, 1]] == votes[:300, 0])
    evaluation = np.mean(classifier[votes[300:, 1]] == votes[300:, 0])
    assert res["train_accuracy"] == pytest.approx(train, abs=1e-12)
    assert res["eval_accuracy"] == pytest.approx(evaluation, abs=1e-12)


class Identity:
    """A ground truth whose observations are its factors, scaled to unit spread."""

    def __init__(self, name):
        self.gt = hier_datasets.ground_truth(name, **({"workers": 0} if name.startswith("boxhead") else {}))
        self.hierarchy = self.gt.hierarchy
        self.sd = self.gt.sample_factors(20000, 123).std(axis=0)

    def sample_factors(self, n, rng, fixed=None):
        return self.gt.sample_factors(n, rng, fixed=fixed)

    def observations_from_factors(self, factors, rng):
        return np.asarray(factors, dtype=np.float64) / self.sd


# the true factors used as the code: disentanglement_lib's vote gave 0.36 on
# spaceshapes, 0.64 on depth2_inter and ~0.05 on the depth-3 configs
@pytest.mark.parametrize(
    "name", ["spaceshapes", "chopsticks/depth2_inter", "chopsticks/depth2_either", "chopsticks/depth3_either",
             "chopsticks/depth3_both", "boxhead/boxhead1", "boxhead/boxhead3"],
)
def test_factor_vae_scores_the_true_factors_one_on_every_dataset(name):
    gt = Identity(name)
    res = hm.factor_vae_score(gt, lambda x: x, num_train=1000, num_eval=500, num_variance_estimate=5000)
    assert res["train_accuracy"] == 1.0 and res["eval_accuracy"] == 1.0
    assert res["num_active_dims"] == gt.hierarchy.num_dims
    # an entangled code (a random rotation) does not
    rot, _ = np.linalg.qr(np.random.default_rng(1).normal(size=(gt.hierarchy.num_dims,) * 2))
    mixed = hm.factor_vae_score(gt, lambda x: x @ rot, num_train=1000, num_eval=500, num_variance_estimate=5000)
    assert mixed["eval_accuracy"] < 0.9


def test_beta_vae_true_factors_reach_the_ceiling_of_the_hierarchy():
    """Fixing `phase` (moons) or `shine` (stars) leaves only x and y varying: the two
    give the same features, so the best possible score is 1 - 1/8 = 0.875."""
    gt = Identity("spaceshapes")
    res = hm.beta_vae_score(gt, lambda x: x, num_train=2000, num_eval=1000)
    assert res["eval_accuracy"] == pytest.approx(0.875, abs=0.03)
    assert hm.beta_vae_score(Identity("chopsticks/depth2_inter"), lambda x: x, **SMALL)["eval_accuracy"] >= 0.97
    assert hm.beta_vae_score(Identity("boxhead/boxhead2"), lambda x: x, **SMALL)["eval_accuracy"] >= 0.97


def test_flat_ground_truth_without_fixed_is_refused_when_hierarchical():
    class NoFixed(Identity):
        def sample_factors(self, n, rng):
            return self.gt.sample_factors(n, rng)

    with pytest.raises(ValueError, match="has no 'fixed' argument"):
        hm.factor_vae_score(NoFixed("spaceshapes"), lambda x: x, **SMALL)


def test_swapped_arguments_are_named():
    with pytest.raises(TypeError, match=r"look swapped: the call is factor_vae_score\(ground_truth, representation"):
        hm.factor_vae_score(perfect, GT)
    with pytest.raises(TypeError, match=r"look swapped: the call is beta_vae_score\(ground_truth, representation"):
        hm.beta_vae_score(perfect, GT)
    with pytest.raises(TypeError, match=r"look swapped: the call is evaluate\(representation_function, dataset"):
        hm.evaluate("chopsticks/depth2_inter", perfect)


def test_one_dimensional_codes_are_refused_as_by_the_array_metrics():
    with pytest.raises(ValueError, match=r"2-D array \(examples, codes\), got shape \(\d+,\); return codes.reshape"):
        hm.factor_vae_score(GT, lambda obs: obs[:, 0], **SMALL)
    with pytest.raises(ValueError, match="reshape a single variable"):
        hm.r4(np.zeros((10, 1)), np.zeros(10))
    with pytest.raises(ValueError, match=r"2-D array \(examples, codes\)"):
        hm.evaluate(lambda x: x[:, 0], "chopsticks/depth2_inter", metrics=["r4"], num_samples=100)


def test_bad_arguments():
    with pytest.raises(ValueError, match="ground_truth must provide"):
        hm.factor_vae_score(object(), perfect)
    with pytest.raises(TypeError, match="representation_function must be callable"):
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
    with pytest.raises(TypeError, match="random_state"):
        hm.factor_vae_score(GT, perfect, random_state=None)


class FactorUnits(Identity):
    """The true factors as the code, in the factors' own units (no rescaling)."""

    def observations_from_factors(self, factors, rng):
        return np.asarray(factors, dtype=np.float64)


@pytest.mark.parametrize("name", dataset_names())
def test_a_perfect_code_in_the_factors_units(name):
    """Scale traps: the FactorVAE score prunes by an absolute standard deviation and the
    beta-VAE score's logistic regression is penalised, so small-scale codes lose under
    disentanglement_lib's defaults; ``standardize=True`` makes both scale-free, and MIG
    and SAP are scale-free as they are."""
    raw, unit = FactorUnits(name), Identity(name)
    small = dict(num_train=300, num_eval=200)
    free = hm.factor_vae_score(raw, lambda x: x, num_variance_estimate=2000, standardize=True, **small)
    assert free["eval_accuracy"] == 1.0 and free["pruned_codes"] == []
    f = raw.sample_factors(2000, 0).astype(np.float64)
    # MIG bins each code over its range: scale-free up to points on a bin edge
    assert hm.mig(f, f)["mig"] == pytest.approx(hm.mig(f, f / unit.sd)["mig"], abs=2e-3)
    assert hm.sap(f, f, standardize=True)["sap"] == pytest.approx(hm.sap(f, f / unit.sd, standardize=True)["sap"],
                                                                 abs=1e-9)
    # the same features up to a factor per column; the solver stops within its tolerance
    scaled = hm.beta_vae_score(raw, lambda x: x, standardize=True, **small)["eval_accuracy"]
    assert scaled == pytest.approx(hm.beta_vae_score(unit, lambda x: x, standardize=True, **small)["eval_accuracy"],
                                   abs=0.03)
    if raw.sd.min() < 0.05:  # some factor is on a small scale: the default rule prunes it, and says so
        with pytest.warns(UserWarning, match="standardize=True"):
            pruned = hm.factor_vae_score(raw, lambda x: x, num_variance_estimate=2000, **small)
        assert pruned["pruned_codes"] and set(pruned["pruned_codes"]) <= set(np.flatnonzero(raw.sd < 0.05))
        assert pruned["eval_accuracy"] < 1.0
