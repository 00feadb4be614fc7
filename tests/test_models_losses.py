"""Loss terms: closed forms, beta-TCVAE's MWS and MSS estimators, the FactorVAE permutation."""
from __future__ import annotations

import math

import numpy as np
import pytest
import tensorflow as tf

import hier_models
from hier_models import losses
from hier_models.base import DEFAULT_OBSERVATION_STD


def np_(x):
    return np.asarray(x)


def test_gaussian_kl_matches_the_closed_form_on_known_values():
    mean = np.array([[1.0, 0.0, -2.0]])
    logvar = np.log(np.array([[1.0, 2.0, 0.5]]))
    # 0.5 * [(1 + 1 - 1 - 0) + (0 + 2 - 1 - log 2) + (4 + 0.5 - 1 + log 2)] = 0.5 * 5.5
    assert np_(losses.gaussian_kl(mean, logvar)) == pytest.approx([2.75], abs=1e-9)
    assert np_(losses.gaussian_kl(np.zeros((2, 4)), np.zeros((2, 4)))) == pytest.approx([0.0, 0.0])


def test_gaussian_kl_agrees_with_monte_carlo():
    rng = np.random.default_rng(0)
    mean, std = np.array([0.5, -1.0]), np.array([0.7, 1.5])
    z = mean + std * rng.standard_normal((400_000, 2))
    log_q = -0.5 * (((z - mean) / std) ** 2 + np.log(2 * np.pi * std**2))
    log_p = -0.5 * (z**2 + np.log(2 * np.pi))
    mc = np.mean(np.sum(log_q - log_p, axis=1))
    closed = np_(losses.gaussian_kl(mean[None], np.log(std**2)[None]))[0]
    assert closed == pytest.approx(mc, abs=0.01)


def test_gaussian_kl_between_closed_form():
    mq, vq, mp, vp = 1.0, 0.5, -1.0, 2.0
    expected = 0.5 * (math.log(vp / vq) + (vq + (mq - mp) ** 2) / vp - 1)
    got = np_(losses.gaussian_kl_between(np.array([[mq]]), np.log([[vq]]), np.array([[mp]]), np.log([[vp]])))
    assert got[0] == pytest.approx(expected, abs=1e-9)
    m, lv = np.array([[0.3, -0.2]]), np.array([[0.1, -0.4]])
    assert np_(losses.gaussian_kl_between(m, lv, m, lv))[0] == pytest.approx(0.0, abs=1e-12)
    standard = np_(losses.gaussian_kl_between(m, lv, np.zeros_like(m), np.zeros_like(lv)))
    np.testing.assert_allclose(standard, np_(losses.gaussian_kl(m, lv)))


def test_merge_gaussians_is_the_precision_weighted_product():
    mean, logvar = losses.merge_gaussians(np.array([[0.0]]), np.log([[1.0]]), np.array([[2.0]]), np.log([[3.0]]))
    # precision 1 + 1/3 = 4/3 -> var 3/4; mean (0 * 1 + 2 / 3) * 3/4 = 1/2
    assert np_(mean)[0, 0] == pytest.approx(0.5)
    assert math.exp(np_(logvar)[0, 0]) == pytest.approx(0.75)


def test_likelihoods_closed_forms():
    x = np.array([[0.0, 1.0, 0.25]])
    logits = np.array([[0.3, -1.2, 2.0]])
    p = 1 / (1 + np.exp(-logits))
    expected = -np.sum(x * np.log(p) + (1 - x) * np.log(1 - p))
    assert np_(losses.bernoulli_nll(x, logits))[0] == pytest.approx(expected, rel=1e-9)
    mean = np.array([[0.1, 0.9, 0.0]])
    std = DEFAULT_OBSERVATION_STD
    sse = np.sum((x - mean) ** 2)
    # std = 200 ** -0.5 makes the NLL 100 x the sum of squared errors plus a constant
    const = 3 * (math.log(std) + 0.5 * math.log(2 * math.pi))
    assert np_(losses.gaussian_nll(x, mean, std))[0] == pytest.approx(100 * sse + const, rel=1e-9)
    # images: sums over every non-batch axis
    img = np.zeros((2, 4, 4, 3))
    assert np_(losses.bernoulli_nll(img, np.zeros_like(img))) == pytest.approx([48 * math.log(2)] * 2)


def test_stratified_weights_sum_to_one_per_row():
    w = np.exp(np_(losses.stratified_log_weights(5, dataset_size=1000)))
    np.testing.assert_allclose(w.sum(axis=1), 1.0, rtol=1e-6)
    assert w[0, 0] == pytest.approx(1 / 1000)
    assert w[0, 1] == pytest.approx(999 / (1000 * 4))
    # the mean of Chen et al.'s weights over which other row takes the remainder:
    # one of the 4 others gets (N - M + 1) / (N (M - 1)), the other 3 get 1 / (M - 1)
    chen = (996 / (1000 * 4) + 3 * (1 / 4)) / 4
    assert w[0, 1] == pytest.approx(chen)
    uniform = np.exp(np_(losses.stratified_log_weights(4)))
    np.testing.assert_allclose(uniform, 0.25)
    assert np.exp(np_(losses.stratified_log_weights(1, dataset_size=10)))[0, 0] == pytest.approx(1.0)


def test_minibatch_weights_are_one_over_n_m():
    w = np.exp(np_(losses.minibatch_log_weights(5, dataset_size=1000)))
    np.testing.assert_allclose(w, 1 / 5000, rtol=1e-6)
    np.testing.assert_allclose(np.exp(np_(losses.minibatch_log_weights(4))), 1 / 16, rtol=1e-6)


def _codes(cov_means, n, posterior_var, seed):
    rng = np.random.default_rng(seed)
    d = cov_means.shape[0]
    mean = rng.multivariate_normal(np.zeros(d), cov_means, size=n).astype(np.float32)
    logvar = np.full((n, d), math.log(posterior_var), np.float32)
    z = (mean + math.sqrt(posterior_var) * rng.standard_normal((n, d))).astype(np.float32)
    return z, mean, logvar


def _gaussian_tc(cov):
    """TC of a Gaussian: sum of marginal entropies minus joint entropy."""
    return 0.5 * (np.sum(np.log(np.diag(cov))) - np.linalg.slogdet(cov)[1])


def test_mss_tc_is_near_zero_for_independent_gaussian_codes():
    estimates = [
        float(losses.total_correlation(*_codes(np.eye(3), 1000, 0.5, seed), estimator="mss")) for seed in range(3)
    ]
    assert max(abs(e) for e in estimates) < 0.05, estimates


def test_mss_tc_is_clearly_positive_and_close_to_the_truth_for_correlated_codes():
    rho = 0.9
    cov = np.full((3, 3), rho) + (1 - rho) * np.eye(3)
    z, mean, logvar = _codes(cov, 1000, 0.5, seed=0)
    estimate = float(losses.total_correlation(z, mean, logvar, estimator="mss"))
    truth = _gaussian_tc(cov + 0.5 * np.eye(3))  # aggregate posterior: means + noise
    assert truth > 0.5
    assert estimate == pytest.approx(truth, abs=0.1)
    # MWS: the same up to the constant (D - 1) log N of its weights (N = M = 1000 here)
    mws = float(losses.total_correlation(z, mean, logvar))
    assert mws - 2 * math.log(1000) == pytest.approx(truth, abs=0.1)


@pytest.mark.parametrize("estimator", losses.ESTIMATORS)
def test_tc_decomposition_adds_up_to_the_sampled_kl(estimator):
    z, mean, logvar = _codes(np.eye(4), 256, 0.3, seed=1)
    parts = losses.tc_decomposition(z, mean, logvar, dataset_size=10_000, estimator=estimator)
    log_q = np.sum(-0.5 * (np.log(2 * np.pi) + logvar + (z - mean) ** 2 / np.exp(logvar)), axis=1)
    log_p = np.sum(-0.5 * (np.log(2 * np.pi) + z**2), axis=1)
    total = float(parts["mi"] + parts["tc"] + parts["dwkl"])
    assert total == pytest.approx(float(np.mean(log_q - log_p)), rel=1e-4)


def _numpy_reference(z, mean, logvar, dataset_size, estimator):
    """Chen et al. (2018) written out in float64 loops: section 4.1 (MWS),
    ``log q(z_i) ~= log sum_j q(z_i | x_j) - log(N M)``, and appendix C (MSS) in its
    symmetric form, row i's own posterior weighted 1/N and each other one
    (N - 1) / (N (M - 1)); the same weights for every dimension's marginal."""
    z, mean, logvar = (np.asarray(a, np.float64) for a in (z, mean, logvar))
    m, d = z.shape
    n = m if dataset_size is None else dataset_size

    def log_normal(x, mu, lv):
        return -0.5 * (math.log(2 * math.pi) + lv + (x - mu) ** 2 / math.exp(lv))

    def weight(i, j):
        if estimator == "mws":
            return 1.0 / (n * m)
        return 1.0 / n if i == j else (n - 1) / (n * (m - 1))

    mi = tc = dwkl = 0.0
    for i in range(m):
        log_q_given_x = sum(log_normal(z[i, k], mean[i, k], logvar[i, k]) for k in range(d))
        joint = sum(
            weight(i, j) * math.exp(sum(log_normal(z[i, k], mean[j, k], logvar[j, k]) for k in range(d)))
            for j in range(m)
        )
        marginals = [
            sum(weight(i, j) * math.exp(log_normal(z[i, k], mean[j, k], logvar[j, k])) for j in range(m))
            for k in range(d)
        ]
        log_qz, log_qz_product = math.log(joint), sum(math.log(q) for q in marginals)
        log_pz = sum(log_normal(z[i, k], 0.0, 0.0) for k in range(d))
        mi += (log_q_given_x - log_qz) / m
        tc += (log_qz - log_qz_product) / m
        dwkl += (log_qz_product - log_pz) / m
    return {"mi": mi, "tc": tc, "dwkl": dwkl}


@pytest.mark.parametrize("estimator", losses.ESTIMATORS)
@pytest.mark.parametrize("dataset_size", [None, 1000])
def test_tc_decomposition_matches_the_written_out_estimators(estimator, dataset_size):
    rng = np.random.default_rng(3)
    mean = rng.normal(size=(6, 3))
    logvar = rng.uniform(-1.5, 0.5, size=(6, 3))
    z = mean + np.exp(0.5 * logvar) * rng.normal(size=(6, 3))
    ref = _numpy_reference(z, mean, logvar, dataset_size, estimator)
    got = losses.tc_decomposition(z.astype(np.float32), mean.astype(np.float32), logvar.astype(np.float32),
                                  dataset_size, estimator=estimator)
    for key in ("mi", "tc", "dwkl"):
        assert float(got[key]) == pytest.approx(ref[key], abs=2e-4), key
    assert float(losses.total_correlation(z, mean, logvar, dataset_size, estimator)) == pytest.approx(ref["tc"], abs=2e-4)


def test_unknown_estimator_is_refused():
    z, mean, logvar = _codes(np.eye(2), 8, 0.4, seed=0)
    with pytest.raises(ValueError, match=r"estimator must be one of \['mws', 'mss'\], got 'mcs'"):
        losses.tc_decomposition(z, mean, logvar, estimator="mcs")
    with pytest.raises(ValueError, match="estimator must be one of"):
        hier_models.BetaTCVAE((8,), latent_dim=2, estimator="MWS")


def _naive_tc_terms(z, mean, logvar, dataset_size, estimator="mws"):
    """The estimator written out with the M x M x D tensor and autograd, as a reference."""
    pairs = losses.gaussian_log_density(z[:, None, :], mean[None], logvar[None])
    weights = losses.minibatch_log_weights if estimator == "mws" else losses.stratified_log_weights
    log_w = weights(z.shape[0], dataset_size)
    log_qz = tf.reduce_logsumexp(log_w + tf.reduce_sum(pairs, axis=2), axis=1)
    log_qz_product = tf.reduce_sum(tf.reduce_logsumexp(log_w[:, :, None] + pairs, axis=1), axis=1)
    log_qz_given_x = tf.reduce_sum(losses.gaussian_log_density(z, mean, logvar), axis=1)
    return {"mi": tf.reduce_mean(log_qz_given_x - log_qz), "tc": tf.reduce_mean(log_qz - log_qz_product)}


@pytest.mark.parametrize("estimator", losses.ESTIMATORS)
@pytest.mark.parametrize("dataset_size", [None, 50_000])
def test_tc_kernel_values_and_gradients_match_the_written_out_estimator(dataset_size, estimator):
    rng = np.random.default_rng(7)
    mean = tf.constant(rng.normal(size=(64, 5)), tf.float32)
    logvar = tf.constant(rng.uniform(-6, 2, size=(64, 5)), tf.float32)
    z = mean + tf.exp(0.5 * logvar) * tf.constant(rng.normal(size=(64, 5)), tf.float32)
    results = []
    for fn in (losses.tc_decomposition, _naive_tc_terms):
        with tf.GradientTape() as tape:
            tape.watch([z, mean, logvar])
            parts = fn(z, mean, logvar, dataset_size, estimator=estimator)
            objective = parts["mi"] + 3.0 * parts["tc"]
        grads = tape.gradient(objective, [z, mean, logvar])
        results.append(([float(parts["mi"]), float(parts["tc"])], [np_(g) for g in grads]))
    (values, grads), (ref_values, ref_grads) = results
    np.testing.assert_allclose(values, ref_values, rtol=1e-4, atol=1e-4)
    for g, ref in zip(grads, ref_grads):
        np.testing.assert_allclose(g, ref, rtol=1e-3, atol=1e-5 * np.abs(ref).max())


def test_tc_stays_finite_for_codes_far_from_their_posteriors():
    mean = np.zeros((8, 2), np.float32)
    logvar = np.full((8, 2), -losses.LOGVAR_LIMIT + 0.5, np.float32)  # very sharp posteriors
    logvar[0] = losses.LOGVAR_LIMIT - 0.5  # one very flat one
    z = np.full((8, 2), 1e3, np.float32)  # 1e3 / 3e-4 standard deviations away
    for estimator in losses.ESTIMATORS:
        parts = losses.tc_decomposition(z, mean, logvar, estimator=estimator)
        assert all(np.isfinite(float(v)) for v in parts.values())
        naive = _naive_tc_terms(z, mean, logvar, None, estimator)["tc"]
        assert float(parts["tc"]) == pytest.approx(float(naive), abs=1e-3)


def test_permute_dims_keeps_every_marginal_and_breaks_dependence():
    rng = np.random.default_rng(0)
    base = rng.standard_normal((512, 1))
    z = np.concatenate([base, base + 0.1 * rng.standard_normal((512, 1)), rng.standard_normal((512, 2))], axis=1)
    z = z.astype(np.float32)
    permuted = np_(losses.permute_dims(z, tf.constant([3, 4], tf.int64)))
    assert permuted.shape == z.shape
    np.testing.assert_array_equal(np.sort(permuted, axis=0), np.sort(z, axis=0))
    moved = np.mean(permuted != z, axis=0)
    assert np.all(moved > 0.9)  # each column really is shuffled
    assert np.corrcoef(z[:, 0], z[:, 1])[0, 1] > 0.95
    assert abs(np.corrcoef(permuted[:, 0], permuted[:, 1])[0, 1]) < 0.15
    # columns get different permutations; the same seed gives the same result
    assert not np.array_equal(np.argsort(permuted[:, 2]), np.argsort(permuted[:, 3]))
    again = np_(losses.permute_dims(z, tf.constant([3, 4], tf.int64)))
    np.testing.assert_array_equal(permuted, again)
    other = np_(losses.permute_dims(z, tf.constant([3, 5], tf.int64)))
    assert not np.array_equal(permuted, other)


def test_vae_kl_metric_equals_the_closed_form_of_its_posteriors():
    x = np.random.default_rng(0).normal(0, 0.3, (64, 64)).astype(np.float32)
    model = hier_models.VAE((64,), latent_dim=5, random_state=0)
    model.compile()
    mean, logvar = (t.numpy().astype(np.float64) for t in model.posterior(x))
    closed = np.mean(0.5 * np.sum(mean**2 + np.exp(logvar) - 1 - logvar, axis=1))
    reported = model.evaluate(x, batch_size=64, verbose=0, return_dict=True)
    assert reported["kl"] == pytest.approx(closed, rel=1e-5)
    assert reported["loss"] == pytest.approx(reported["reconstruction"] + 1.0 * reported["kl"], rel=1e-5)


def test_bound_logvar_is_near_identity_and_keeps_the_kl_finite():
    raw = np.array([[-1e6, -40.0, -1.0, 0.0, 0.5, 40.0, 1e6]], np.float32)
    bounded = np_(losses.bound_logvar(raw))
    assert np.all(np.abs(bounded) < losses.LOGVAR_LIMIT + 1e-6)
    np.testing.assert_allclose(bounded[0, 2:5], [-1.0, 0.0, 0.5], atol=2e-3)
    assert np.all(np.diff(bounded[0]) >= 0)  # monotone
    mean = np.full_like(raw, 3.0)
    assert np.isfinite(np_(losses.gaussian_kl_between(mean, bounded, -mean, bounded[:, ::-1]))).all()
    assert not np.isfinite(np_(losses.gaussian_kl_between(mean, raw, -mean, raw[:, ::-1]))).all()
