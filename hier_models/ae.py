"""Plain deterministic autoencoder."""
from __future__ import annotations

import keras

from hier_models.base import SingleLayerModel

__all__ = ["AE"]


@keras.saving.register_keras_serializable(package="hier_models")
class AE(SingleLayerModel):
    """Deterministic autoencoder: loss = reconstruction negative log-likelihood.

    ``AE(input_shape, latent_dim=10, *, architecture=None, activation=None,
    hidden_units=None, likelihood=None, observation_std=..., seed=None)``.
    ``activation="softplus"`` gives the smooth autoencoder whose codes MIMOSA needs
    (ReLU corners break local SVD). Metrics: ``loss``, ``reconstruction``.
    """

    loss_terms = ("loss", "reconstruction")

    def __init__(self, input_shape, latent_dim: int = 10, **kwargs):
        super().__init__(input_shape, latent_dim, **kwargs)
        self._finish_init()

    def _forward(self, x, training):
        z = self.encoder(x, training=training)
        recon = self._reconstruction(x, self.decoder(z, training=training))
        return {"loss": recon, "reconstruction": recon}, z

    def _codes(self, x):
        return self.encoder(x, training=False)
