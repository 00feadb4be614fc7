"""Plain deterministic autoencoder."""
from __future__ import annotations

import keras

from hier_models.base import DEFAULT_OBSERVATION_STD, Autoencoder

__all__ = ["AE"]


@keras.saving.register_keras_serializable(package="hier_models")
class AE(Autoencoder):
    """Deterministic autoencoder: loss = reconstruction negative log-likelihood.

    ``AE(input_shape, latent_dim=10, *, architecture=None, activation=None,
    hidden_units=None, likelihood=None, observation_std=..., seed=None)``.
    ``activation="softplus"`` gives the smooth autoencoder whose codes MIMOSA needs
    (ReLU corners break local SVD). Metrics: ``loss``, ``reconstruction``.
    """

    loss_terms = ("loss", "reconstruction")

    def __init__(
        self,
        input_shape,
        latent_dim: int = 10,
        *,
        architecture: str | None = None,
        activation: str | None = None,
        hidden_units=None,
        likelihood: str | None = None,
        observation_std: float = DEFAULT_OBSERVATION_STD,
        seed: int | None = None,
        **kwargs,
    ):
        super().__init__(input_shape, likelihood=likelihood, observation_std=observation_std, seed=seed, **kwargs)
        self._build_single_layer(latent_dim, 1, architecture, activation, hidden_units)
        self._finish_init()

    def _forward(self, x, training):
        z = self.encoder(x, training=training)
        recon = self._reconstruction(x, self.decoder(z, training=training))
        return {"loss": recon, "reconstruction": recon}, z

    def _codes(self, x):
        return self.encoder(x, training=False)

    def _decode_tensor(self, z):
        return self.decoder(z, training=False)
