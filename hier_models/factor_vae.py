"""FactorVAE (Kim & Mnih 2018): a density-ratio discriminator penalises total correlation."""
from __future__ import annotations

import keras
from keras import ops

from hier_models import losses
from hier_models.adversarial import Adversarial, build_discriminator, default_discriminator_optimizer
from hier_models.vae import VAE
from hier_models.validation import check_non_negative, check_units

__all__ = ["FactorVAE", "build_discriminator", "default_discriminator_optimizer"]


@keras.saving.register_keras_serializable(package="hier_models")
class FactorVAE(Adversarial, VAE):
    """VAE + ``gamma`` x total correlation estimated by a discriminator.

    ``FactorVAE(input_shape, latent_dim=10, *, gamma=10.0, beta=1.0,
    discriminator_units=(1000,) * 6, discriminator_dtype=None, beta_anneal_steps=0, ...)``
    (other arguments as :class:`VAE`; ``discriminator_dtype="mixed_bfloat16"`` runs the
    discriminator in 16 bits, see :func:`~hier_models.adversarial.build_discriminator`);
    ``compile(optimizer=..., discriminator_optimizer=...)``.

    Each training step (1) updates the encoder and decoder on
    ``reconstruction + beta_t KL + gamma E[D(z)]``, where ``D(z)`` is the
    discriminator's logit, an estimate of ``log q(z) / prod_d q(z_d)``; then (2) updates
    the discriminator with its own optimiser (default
    :func:`default_discriminator_optimizer`) to tell the batch's codes (label 1) from
    the same codes with every dimension permuted across the batch
    (:func:`hier_models.losses.permute_dims`, label 0). Metrics: ``loss``,
    ``reconstruction``, ``kl``, ``tc`` (E[D(z)]), ``discriminator_loss``,
    ``discriminator_accuracy``, ``beta``.
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
        gamma = check_non_negative("gamma", gamma)
        units = check_units("discriminator_units", discriminator_units)
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
