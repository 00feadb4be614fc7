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
    "ESTIMATORS",
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
    "stratified_log_weights",
    "tc_decomposition",
    "total_correlation",
]

LIKELIHOODS = ("bernoulli", "gaussian")
#: the batch estimators of the aggregate posterior of :func:`tc_decomposition`
ESTIMATORS = ("mws", "mss")
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
    """(M, M) log weights of minibatch weighted sampling (MWS; Chen et al. 2018, section 4.1).

    ``log q(z_i) ~= log sum_j q(z_i | x_j) - log(N M)``: every pair gets the weight
    ``1 / (N M)``, so the weights of a row sum to 1/N rather than 1 (the estimate comes
    from a lower bound). ``dataset_size=None`` treats the batch as the whole data set
    (N = M).
    """
    m = ops.cast(batch_size, dtype)
    n = m if dataset_size is None else ops.cast(dataset_size, dtype)
    return ops.zeros((batch_size, batch_size), dtype) - ops.log(n * m)


def stratified_log_weights(batch_size, dataset_size=None, dtype="float32"):
    """(M, M) log weights of minibatch stratified sampling (MSS; Chen et al. 2018, appendix C).

    The aggregate posterior ``q(z) = 1/N sum_n q(z | x_n)`` at a code ``z_i`` drawn
    from row i is estimated from the batch alone: row i's own posterior stands for
    itself (weight 1/N) and the other M - 1 rows stand for the other N - 1 examples
    (weight (N - 1) / (N (M - 1)) each); the weights of each row sum to one. This is
    the symmetric form of Chen et al.'s estimator, which gives one of the other rows
    the remainder weight ``(N - M + 1) / (N (M - 1))`` and the rest ``1 / (M - 1)``:
    here each other row gets the mean of those weights over which row takes the
    remainder, which keeps the density estimate unbiased and independent of the row
    order.
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


def _mixture_shift(z, own_mean, own_logvar, own_log_w, logvar, log_w):
    """(m, D) log-sum-exp shifts for :func:`_log_mixture_densities`, without gradient.

    Row i's own term ``log w_ii + log q(z_id | x_i)`` (0.5 log 2 pi dropped; ``own_*``
    are the codes' own posteriors and weights) is the natural shift: it is part of the
    sum, so the sum of the shifted exponentials is at least 1. It is raised to
    ``bound - 80`` where ``bound`` is the largest value any term can take (the peak
    density of the sharpest of the M posteriors ``logvar``), so no shifted term
    exceeds e^80 whatever ``z`` is: the sum cannot overflow (it could underflow only if
    every term lay more than ~167 nats below that peak), and no max pass over the
    (m, M, D) terms is needed.
    """
    own = gaussian_log_density(z, own_mean, own_logvar) + 0.5 * _LOG_2PI + own_log_w[:, None]
    bound = tf.reduce_max(-0.5 * logvar, axis=0) + tf.reduce_max(log_w)
    return tf.stop_gradient(tf.maximum(own, bound[None, :] - 80.0))


def _log_mixture_densities(z, mean, logvar, log_w, own_mean, own_logvar, own_log_w):
    """``(log_qz_dims (m, D), log_qz (m,))``: the weighted mixtures of the batch's M
    posteriors ``(mean, logvar)`` at each of m codes ``z``, per dimension and jointly
    (0.5 log 2 pi per dimension dropped).

    ``log_qz_dims[i, d] = log sum_j w_ij q(z_id | x_j)`` and
    ``log_qz[i] = log sum_j w_ij prod_d q(z_id | x_j)`` with the (m, M) weights
    ``log_w``; ``own_*`` are each code's own posterior and weight (for the shift).
    The (D, m, M) pair terms are laid out dimension first, shifted by
    :func:`_mixture_shift` and fused by XLA; the hand-written gradient reuses the
    forward's exponentials (the softmax weights ``p_ijd``) instead of differentiating
    through the log-sum-exps op by op.
    """
    shift = tf.transpose(_mixture_shift(z, own_mean, own_logvar, own_log_w, logvar, log_w))  # (D, m)

    @tf.custom_gradient
    def densities(z, mean, logvar):
        zt, mt, lt = tf.transpose(z), tf.transpose(mean), tf.transpose(logvar)
        precision = tf.exp(-lt)
        pairs = -0.5 * (lt[:, None, :] + tf.square(zt[:, :, None] - mt[:, None, :]) * precision[:, None, :])
        terms = tf.exp(pairs + log_w[None] - shift[:, :, None])
        sums = tf.reduce_sum(terms, axis=2)
        log_qz_dims = tf.math.log(sums) + shift
        joint = tf.reduce_sum(pairs, axis=0) + log_w
        log_qz = tf.reduce_logsumexp(joint, axis=1)

        def gradient(grad_dims, grad_joint):
            # d/d pairs[d, i, j] of the weighted sum of both log-sum-exps
            weights = (tf.transpose(grad_dims) / sums)[:, :, None] * terms
            weights += (grad_joint[:, None] * tf.exp(joint - log_qz[:, None]))[None]
            diff = zt[:, :, None] - mt[:, None, :]  # [d, i, j] = z_id - mean_jd, recomputed: cheaper than kept
            scaled = weights * diff * precision[:, None, :]
            grad_z = -tf.reduce_sum(scaled, axis=2)
            grad_mean = tf.reduce_sum(scaled, axis=1)
            grad_logvar = 0.5 * tf.reduce_sum(scaled * diff - weights, axis=1)
            return tf.transpose(grad_z), tf.transpose(grad_mean), tf.transpose(grad_logvar)

        return (tf.transpose(log_qz_dims), log_qz), gradient

    return densities(z, mean, logvar)


def _check_estimator(estimator) -> str:
    if estimator not in ESTIMATORS:
        raise ValueError(f"estimator must be one of {list(ESTIMATORS)}, got {estimator!r}")
    return estimator


def tc_decomposition(z, mean, logvar, dataset_size=None, estimator: str = "mws", *, batch=None, offset=0):
    """Batch means of the KL decomposition of beta-TCVAE (Chen et al. 2018).

    ``z`` (M, D) are samples of the posteriors ``N(mean, exp(logvar))`` of the same
    M rows, from a data set of ``dataset_size`` = N examples (None: the batch is the
    data set). The aggregate posterior is estimated on the batch as
    ``log q(z_i) = log sum_j w_ij prod_d q(z_id | x_j)`` and
    ``log q(z_id) = log sum_j w_ij q(z_id | x_j)``, with the weights of ``estimator``:

    - ``"mws"`` (default): minibatch weighted sampling, ``w_ij = 1 / (N M)``
      (:func:`minibatch_log_weights`; section 4.1), the estimator of
      disentanglement_lib's beta-TCVAE. Its weights sum to 1/N per row: against the
      uniform weights 1/M, the terms carry constant offsets (mi ``+ log N``, tc
      ``+ (D - 1) log N``, dwkl ``- D log N``) and the same gradients;
      disentanglement_lib's total correlation also drops the constant ``(D - 1) log(N M)``;
    - ``"mss"``: minibatch stratified sampling (:func:`stratified_log_weights`;
      appendix C), whose weights sum to one: a consistent estimate of the terms.

    Returns a dict of scalars

    - ``mi``: index-code mutual information ``E[log q(z|x) - log q(z)]``,
    - ``tc``: total correlation ``E[log q(z) - sum_d log q(z_d)]``,
    - ``dwkl``: dimension-wise KL ``E[sum_d log q(z_d) - log p(z)]``,

    whose sum is the sampled KL(q(z|x) || N(0, I)) for either estimator. The
    M x M x D pair densities are computed by one XLA-compiled kernel with its own
    gradient (docs/results/models_throughput.md); the estimators differ only in the
    (M, M) weights it is given.

    ``batch=(batch_mean, batch_logvar)`` gives the posteriors of a whole batch of M
    rows of which ``z``, ``mean`` and ``logvar`` are the m rows starting at row
    ``offset`` (a replica's share of a global batch split over devices): the
    aggregate posterior is estimated from all M posteriors and the terms are means
    over the m rows, so the results of consecutive shares, weighted by m / M, sum to
    the whole batch's (exactly: the same weights and pairs).
    """
    estimator = _check_estimator(estimator)
    z = tf.convert_to_tensor(z)
    mean, logvar = tf.cast(mean, z.dtype), tf.cast(logvar, z.dtype)
    if batch is None:
        return _kl_decomposition(z, mean, logvar, mean, logvar, None, dataset_size, estimator)
    if not isinstance(batch, (tuple, list)) or len(batch) != 2:
        raise ValueError(f"batch must be a (mean, logvar) pair of the whole batch's posteriors, got {type(batch).__name__}")
    batch_mean, batch_logvar = (tf.cast(v, z.dtype) for v in batch)
    offset = tf.convert_to_tensor(offset, tf.int32)
    return _kl_decomposition(z, mean, logvar, batch_mean, batch_logvar, offset, dataset_size, estimator)


@tf.function(jit_compile=True)
def _kl_decomposition(z, mean, logvar, batch_mean, batch_logvar, offset, dataset_size, estimator):
    """:func:`tc_decomposition` compiled as one XLA kernel (traced once per
    ``dataset_size`` and ``estimator``, and for a whole batch, ``offset=None``, or a
    share of one): rows ``offset ..`` of the batch's weights."""
    weights = minibatch_log_weights if estimator == "mws" else stratified_log_weights
    log_w = weights(tf.shape(batch_mean)[0], dataset_size, dtype=z.dtype)
    if offset is None:
        own_log_w = tf.linalg.diag_part(log_w)
    else:
        rows = tf.shape(z)[0]
        log_w = log_w[offset : offset + rows]
        own_log_w = tf.linalg.diag_part(log_w[:, offset : offset + rows])
    log_qz_dims, log_qz = _log_mixture_densities(z, batch_mean, batch_logvar, log_w, mean, logvar, own_log_w)
    constant = 0.5 * _LOG_2PI * tf.cast(tf.shape(z)[1], z.dtype)
    log_qz = log_qz - constant
    log_qz_product = tf.reduce_sum(log_qz_dims, axis=1) - constant
    log_qz_given_x = tf.reduce_sum(gaussian_log_density(z, mean, logvar), axis=1)
    log_pz = tf.reduce_sum(gaussian_log_density(z, tf.zeros_like(z), tf.zeros_like(z)), axis=1)
    return {
        "mi": tf.reduce_mean(log_qz_given_x - log_qz),
        "tc": tf.reduce_mean(log_qz - log_qz_product),
        "dwkl": tf.reduce_mean(log_qz_product - log_pz),
    }


def total_correlation(z, mean, logvar, dataset_size=None, estimator: str = "mws", *, batch=None, offset=0):
    """The total-correlation estimate of :func:`tc_decomposition` (``estimator``
    ``"mws"`` or ``"mss"``; ``batch`` and ``offset`` as there)."""
    return tc_decomposition(z, mean, logvar, dataset_size, estimator, batch=batch, offset=offset)["tc"]


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
