"""beta-TCVAE (Chen et al. 2018): the KL split by minibatch weighted or stratified sampling."""
from __future__ import annotations

import keras
import tensorflow as tf

from hier_datasets.validation import check_choice, check_non_negative, check_positive_int
from hier_models import distribute, losses
from hier_models.vae import VAE

__all__ = ["BetaTCVAE"]


@keras.saving.register_keras_serializable(package="hier_models")
class BetaTCVAE(VAE):
    """VAE whose KL is split into index-code MI, total correlation and dimension-wise KL.

    The objective of Chen et al. is ``reconstruction + alpha MI + beta TC + gamma DWKL``,
    with the three terms estimated on the batch by
    :func:`hier_models.losses.tc_decomposition`: ``estimator="mws"`` (default) is
    minibatch weighted sampling (section 4.1, as in disentanglement_lib), ``"mss"``
    minibatch stratified sampling (appendix C). Pass the training set's size as
    ``dataset_size``, or leave None to treat the batch as the data set.
    Since MI + TC + DWKL is a one-sample estimate of the KL, the loss uses the
    lower-variance form with the analytic KL:
    ``reconstruction + r_t (KL + (alpha-1) MI + (beta-1) TC + (gamma-1) DWKL)``, where
    ``r_t = min(1, t / beta_anneal_steps)`` warms the whole penalty up from 0
    (``beta_start=None``, the default). With ``beta_start`` a number, the penalty keeps
    its full weight and the TC weight is annealed instead,
    ``reconstruction + KL + (alpha-1) MI + (beta_t-1) TC + (gamma-1) DWKL`` with
    ``beta_t = beta_start + (beta - beta_start) r_t``, as the Boxhead authors anneal
    beta-TCVAE from 200 (:mod:`hier_models.protocols`). Metrics: ``loss``,
    ``reconstruction``, ``kl``, ``mi``, ``tc``, ``dwkl``, ``beta`` (r_t beta, or beta_t).
    Under a ``tf.distribute`` strategy the aggregate posterior is estimated on the
    global batch, gathered from every replica (:mod:`hier_models.distribute`).

    Args:
      input_shape: shape of one observation, e.g. ``(64,)`` or ``(64, 64, 3)``.
      latent_dim: number of latent dimensions, default 10.
      beta: weight of the total correlation, default 5.0 (Ross & Doshi-Velez 2021,
        section 7; the Boxhead paper sweeps 1, 5, 10, 20, section 5).
      alpha: weight of the index-code mutual information, default 1.0, as in the
        beta-TCVAE objective of Chen et al. (2018) and of the Boxhead paper (appendix A).
      gamma: weight of the dimension-wise KL, default 1.0 (same objectives).
      dataset_size: number of training examples N, which the estimators' importance
        weights use; default (None) treats the batch as the data set.
      estimator: ``"mws"`` (default, minibatch weighted sampling, Chen et al. 2018,
        section 4.1) or ``"mss"`` (minibatch stratified sampling, appendix C).
      **kwargs: ``beta_anneal_steps``, ``beta_start``, ``training_steps`` (see
        :class:`~hier_models.vae.VAE`), ``architecture``, ``activation``,
        ``hidden_units`` (see :class:`~hier_models.single_layer.SingleLayerModel`) and
        ``likelihood``, ``observation_std``, ``random_state``, ``name``, ``trainable``
        (see :class:`~hier_models.base.Autoencoder`).

    Raises:
      ValueError: a negative ``alpha`` or ``gamma``, a ``dataset_size`` below 1, an
        unknown ``estimator``, or an invalid argument of :class:`~hier_models.vae.VAE`.

    Example:
      >>> import keras, numpy as np
      >>> from hier_models import BetaTCVAE
      >>> keras.utils.set_random_seed(0)
      >>> x = np.random.default_rng(0).normal(size=(16, 16)).astype("float32")
      >>> model = BetaTCVAE((16,), latent_dim=2, dataset_size=16, hidden_units=(8,), random_state=0)
      >>> model.compile(optimizer="adam")
      >>> logs = model.fit(x, batch_size=16, epochs=1, verbose=0).history  # one step
      >>> sorted(logs)
      ['beta', 'dwkl', 'kl', 'loss', 'mi', 'reconstruction', 'tc']
    """

    loss_terms = ("loss", "reconstruction", "kl", "mi", "tc", "dwkl")

    def __init__(
        self,
        input_shape,
        latent_dim: int = 10,
        *,
        beta: float = 5.0,
        alpha: float = 1.0,
        gamma: float = 1.0,
        dataset_size: int | None = None,
        estimator: str = "mws",
        **kwargs,
    ):
        alpha = check_non_negative(alpha, "alpha")
        gamma = check_non_negative(gamma, "gamma")
        dataset_size = None if dataset_size is None else check_positive_int(dataset_size, "dataset_size")
        estimator = check_choice(estimator, "estimator", losses.ESTIMATORS)
        super().__init__(input_shape, latent_dim, beta=beta, **kwargs)
        self.alpha, self.gamma, self.dataset_size, self.estimator = alpha, gamma, dataset_size, estimator
        self._config.update(dict(alpha=alpha, gamma=gamma, dataset_size=dataset_size, estimator=estimator))

    def _regulariser(self, z, mean, logvar, kl, fraction):
        parts = self._decomposition(z, mean, logvar)
        if self.beta_start is None:  # warm-up: the whole penalty from 0
            weight, beta = fraction, self.beta
        else:  # the TC weight annealed from beta_start
            weight, beta = 1.0, self._beta_at(fraction)
        penalty = (
            kl
            + (self.alpha - 1.0) * parts["mi"]
            + (beta - 1.0) * parts["tc"]
            + (self.gamma - 1.0) * parts["dwkl"]
        )
        return weight * penalty, {**parts, "beta": weight * beta}

    def _decomposition(self, z, mean, logvar) -> dict:
        """:func:`~hier_models.losses.tc_decomposition` of the batch. When replicas
        split a global batch, the posteriors of every replica are gathered: each
        replica's codes are scored against the aggregate posterior of the global
        batch, so the replicas' terms weighted by their shares are the global batch's."""
        share = distribute.batch_share(tf.shape(z)[0])
        if share is None:
            return losses.tc_decomposition(z, mean, logvar, self.dataset_size, self.estimator)
        batch = (distribute.gather_rows(mean, share), distribute.gather_rows(logvar, share))
        return losses.tc_decomposition(
            z, mean, logvar, self.dataset_size, self.estimator, batch=batch, offset=share.offset
        )
