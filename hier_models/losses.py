"""Loss terms of the VAE family as plain tensor functions.

All functions take batches (rows = examples) and return per-example values or
batch means, as documented; they accept numpy arrays or tensors. A diagonal
Gaussian is given by its ``mean`` and ``logvar`` (log variance).
"""
from __future__ import annotations

import math

import tensorflow as tf
from keras import ops

__all__ = [
    "LIKELIHOODS",
    "LOGVAR_LIMIT",
    "bound_logvar",
    "bernoulli_nll",
    "gaussian_kl",
    "gaussian_kl_between",
    "gaussian_log_density",
    "gaussian_nll",
    "merge_gaussians",
    "minibatch_log_weights",
    "permute_dims",
    "tc_decomposition",
    "total_correlation",
]

LIKELIHOODS = ("bernoulli", "gaussian")
_LOG_2PI = math.log(2.0 * math.pi)

#: log variances of the models' Gaussians stay inside (-LOGVAR_LIMIT, LOGVAR_LIMIT)
LOGVAR_LIMIT = 16.0


def bound_logvar(raw, limit: float = LOGVAR_LIMIT):
    """``limit * tanh(raw / limit)``: a network output as a log variance in (-limit, limit).

    Close to the identity for |raw| well below the limit (standard deviations between
    about 3e-4 and 3e3 for the default); it keeps ``exp(logvar)``, ``exp(-logvar)``
    and their products finite when a large step throws a head's outputs far out
    (without it, one Adam step of a Boxhead ladder at learning rate 1e-3 can overflow
    a pro-LVAE's conditional prior).
    """
    return limit * ops.tanh(raw / limit)


def _flat_sum(values):
    """Sum over every axis but the first."""
    return ops.sum(ops.reshape(values, (ops.shape(values)[0], -1)), axis=1)


def bernoulli_nll(x, logits):
    """Per-example Bernoulli negative log-likelihood (nats), summed over all pixels.

    ``x`` holds targets in [0, 1]; ``logits`` the decoder's pre-sigmoid outputs.
    """
    x = ops.cast(x, logits.dtype)
    # max(l, 0) - l * x + log(1 + exp(-|l|)) is the numerically stable form.
    per_value = ops.relu(logits) - logits * x + ops.log1p(ops.exp(-ops.abs(logits)))
    return _flat_sum(per_value)


def gaussian_nll(x, mean, std):
    """Per-example Gaussian negative log-likelihood with fixed standard deviation ``std``.

    ``sum((x - mean)^2) / (2 std^2) + D (log std + log(2 pi) / 2)`` over the D values.
    """
    x = ops.cast(x, mean.dtype)
    per_value = 0.5 * ops.square((x - mean) / std) + (math.log(std) + 0.5 * _LOG_2PI)
    return _flat_sum(per_value)


def gaussian_log_density(z, mean, logvar):
    """Elementwise log N(z; mean, exp(logvar)) (broadcasting)."""
    return -0.5 * (_LOG_2PI + logvar + ops.square(z - mean) * ops.exp(-logvar))


def gaussian_kl(mean, logvar):
    """Per-example KL(N(mean, exp(logvar)) || N(0, I)), summed over dimensions.

    Closed form: ``0.5 * sum(mean^2 + var - 1 - logvar)``.
    """
    return 0.5 * ops.sum(ops.square(mean) + ops.exp(logvar) - 1.0 - logvar, axis=-1)


def gaussian_kl_between(mean_q, logvar_q, mean_p, logvar_p):
    """Per-example KL(N(mean_q, var_q) || N(mean_p, var_p)), summed over dimensions.

    Closed form: ``0.5 * sum(logvar_p - logvar_q + (var_q + (mean_q - mean_p)^2) / var_p - 1)``.
    """
    ratio = ops.exp(logvar_q - logvar_p) + ops.square(mean_q - mean_p) * ops.exp(-logvar_p)
    return 0.5 * ops.sum(logvar_p - logvar_q + ratio - 1.0, axis=-1)


def merge_gaussians(mean_a, logvar_a, mean_b, logvar_b):
    """Precision-weighted product of two diagonal Gaussians (the ladder VAE merge).

    Returns ``(mean, logvar)`` with precision ``1/var_a + 1/var_b`` and mean
    ``(mean_a / var_a + mean_b / var_b) * var``.
    """
    logvar = -ops.logaddexp(-logvar_a, -logvar_b)
    mean = (mean_a * ops.exp(logvar - logvar_a)) + (mean_b * ops.exp(logvar - logvar_b))
    return mean, logvar


def minibatch_log_weights(batch_size, dataset_size=None, dtype="float32"):
    """(M, M) log importance weights of the minibatch-weighted density estimate.

    The aggregate posterior ``q(z) = 1/N sum_n q(z | x_n)`` at a code ``z_i`` drawn
    from row i is estimated from the batch alone: row i's own posterior stands for
    itself (weight 1/N) and the other M - 1 rows stand for the other N - 1 examples
    (weight (N - 1) / (N (M - 1)) each); the weights of each row sum to one.
    ``dataset_size=None`` treats the batch as the whole data set (N = M, every
    weight 1/M). A batch of one gets weight 1.
    """
    m = ops.cast(batch_size, dtype)
    if dataset_size is None:
        own = 1.0 / m
        other = own
    else:
        n = ops.cast(dataset_size, dtype)
        own = ops.where(m > 1, 1.0 / n, 1.0)
        other = (n - 1.0) / (n * ops.maximum(m - 1.0, 1.0))
    eye = ops.eye(batch_size, dtype=dtype)
    return ops.log(eye * own + (1.0 - eye) * other)


def tc_decomposition(z, mean, logvar, dataset_size=None):
    """Batch means of the KL decomposition of beta-TCVAE (Chen et al. 2018).

    ``z`` (M, D) are samples of the posteriors ``N(mean, exp(logvar))`` of the same
    M rows. With ``log q(z_i)`` and ``log q(z_id)`` estimated by
    :func:`minibatch_log_weights`, returns a dict of scalars

    - ``mi``: index-code mutual information ``E[log q(z|x) - log q(z)]``,
    - ``tc``: total correlation ``E[log q(z) - sum_d log q(z_d)]``,
    - ``dwkl``: dimension-wise KL ``E[sum_d log q(z_d) - log p(z)]``,

    whose sum is the sampled KL(q(z|x) || N(0, I)).
    """
    z = ops.convert_to_tensor(z)
    mean = ops.cast(mean, z.dtype)
    logvar = ops.cast(logvar, z.dtype)
    batch = ops.shape(z)[0]
    # pairs[i, j, d] = log q(z_id | x_j)
    pairs = gaussian_log_density(z[:, None, :], mean[None, :, :], logvar[None, :, :])
    log_w = minibatch_log_weights(batch, dataset_size, dtype=z.dtype)
    log_qz = ops.logsumexp(log_w + ops.sum(pairs, axis=2), axis=1)
    log_qz_product = ops.sum(ops.logsumexp(log_w[:, :, None] + pairs, axis=1), axis=1)
    log_qz_given_x = ops.sum(gaussian_log_density(z, mean, logvar), axis=1)
    log_pz = ops.sum(gaussian_log_density(z, ops.zeros_like(z), ops.zeros_like(z)), axis=1)
    return {
        "mi": ops.mean(log_qz_given_x - log_qz),
        "tc": ops.mean(log_qz - log_qz_product),
        "dwkl": ops.mean(log_qz_product - log_pz),
    }


def total_correlation(z, mean, logvar, dataset_size=None):
    """The minibatch-weighted total-correlation estimate of :func:`tc_decomposition`."""
    return tc_decomposition(z, mean, logvar, dataset_size)["tc"]


def permute_dims(z, seed):
    """Shuffle every column of ``z`` (M, D) across rows, independently per column.

    Each column of the result is a permutation of the same column of ``z`` (so every
    dimension's marginal is kept exactly) while the dependence between dimensions is
    broken: the FactorVAE sample of ``prod_d q(z_d)``. ``seed`` is a stateless seed,
    a shape-(2,) integer tensor.
    """
    z = tf.convert_to_tensor(z)
    keys = tf.random.stateless_uniform(tf.shape(z), seed=seed)
    order = tf.argsort(keys, axis=0)
    # column d of the result is z[order[:, d], d]
    return tf.transpose(tf.gather(tf.transpose(z), tf.transpose(order), batch_dims=1))
