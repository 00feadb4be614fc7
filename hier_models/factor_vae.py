"""FactorVAE (Kim & Mnih 2018): a density-ratio discriminator penalises total correlation."""
from __future__ import annotations

import keras
from keras import ops

from hier_datasets.validation import check_non_negative, check_units
from hier_models import losses
from hier_models.adversarial import Adversarial, build_discriminator, default_discriminator_optimizer
from hier_models.vae import VAE

__all__ = ["FactorVAE", "build_discriminator", "default_discriminator_optimizer"]


@keras.saving.register_keras_serializable(package="hier_models")
class FactorVAE(Adversarial, VAE):
    """VAE + ``gamma`` x total correlation estimated by a discriminator.

    Compile with ``compile(optimizer=..., discriminator_optimizer=...)``. Each training
    step (1) updates the encoder and decoder on
    ``reconstruction + beta_t KL + gamma E[D(z)]``, where ``D(z)`` is the
    discriminator's logit, an estimate of ``log q(z) / prod_d q(z_d)``; then (2)
    updates the discriminator with its own optimiser (default
    :func:`default_discriminator_optimizer`) to tell the batch's codes (label 1) from
    the same codes with every dimension permuted across the batch
    (:func:`hier_models.losses.permute_dims`, label 0). Metrics: ``loss``,
    ``reconstruction``, ``kl``, ``tc`` (E[D(z)]), ``discriminator_loss``,
    ``discriminator_accuracy``, ``beta``.

    Args:
      input_shape: shape of one observation, e.g. ``(64,)`` or ``(64, 64, 3)``.
      latent_dim: number of latent dimensions, default 10.
      gamma: weight of the total correlation penalty, default 10.0 (Kim & Mnih 2018,
        section 3; the value of Ross & Doshi-Velez 2021, section 7).
      discriminator_units: hidden widths of the leaky-ReLU discriminator, default six
        layers of 1,000 (Kim & Mnih 2018, appendix).
      discriminator_dtype: dtype policy of the discriminator's hidden layers: None (the
        default, the global policy), ``"float32"``, ``"mixed_bfloat16"`` or
        ``"mixed_float16"`` (16-bit arithmetic, see
        :func:`~hier_models.adversarial.build_discriminator`).
      **kwargs: ``beta`` (default 1.0: the FactorVAE objective keeps the plain KL),
        ``beta_anneal_steps``, ``beta_start``, ``training_steps`` (see
        :class:`~hier_models.vae.VAE`), ``architecture``, ``activation``,
        ``hidden_units`` (see :class:`~hier_models.single_layer.SingleLayerModel`) and
        ``likelihood``, ``observation_std``, ``random_state``, ``name``, ``trainable``
        (see :class:`~hier_models.base.Autoencoder`).

    Raises:
      ValueError: a negative ``gamma``, a ``discriminator_units`` width below 1, an
        unknown ``discriminator_dtype``, or an invalid argument of
        :class:`~hier_models.vae.VAE`.

    Example:
      >>> import keras, numpy as np
      >>> from hier_models import FactorVAE
      >>> keras.utils.set_random_seed(0)
      >>> x = np.random.default_rng(0).normal(size=(16, 16)).astype("float32")
      >>> model = FactorVAE((16,), latent_dim=2, hidden_units=(8,), discriminator_units=(8,), random_state=0)
      >>> model.compile(optimizer="adam", discriminator_optimizer=keras.optimizers.Adam(1e-4))
      >>> logs = model.fit(x, batch_size=16, epochs=1, verbose=0).history  # one step of each network
      >>> 0.0 <= logs["discriminator_accuracy"][0] <= 1.0, int(model.discriminator_optimizer.iterations)
      (True, 1)
    """

    loss_terms = ("loss", "reconstruction", "kl", "tc", "discriminator_loss", "discriminator_accuracy")

    def __init__(
        self,
        input_shape,
        latent_dim: int = 10,
        *,
        gamma: float = 10.0,
        discriminator_units=(1000,) * 6,
        discriminator_dtype: str | None = None,
        **kwargs,
    ):
        gamma = check_non_negative(gamma, "gamma")
        units = check_units(discriminator_units, "discriminator_units")
        super().__init__(input_shape, latent_dim, **kwargs)
        self.gamma = gamma
        self.discriminator = build_discriminator(self.latent_dim, units, dtype=discriminator_dtype)
        self._config.update(dict(gamma=gamma, discriminator_units=list(units), discriminator_dtype=discriminator_dtype))

    def _regulariser(self, z, mean, logvar, kl, fraction):
        tc = ops.mean(self.discriminator(z))
        beta = self._beta_at(fraction)
        return beta * kl + self.gamma * tc, {"beta": beta, "tc": tc}

    def _auxiliary_step(self, z, training):
        # the permutation runs over the global batch when replicas split it
        real, fake, share = self._permuted_codes(z, losses.permute_dims)
        return self._discriminator_step(real, fake, training, share)
