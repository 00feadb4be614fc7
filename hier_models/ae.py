"""Plain deterministic autoencoder."""
from __future__ import annotations

import keras

from hier_models.single_layer import SingleLayerModel

__all__ = ["AE"]


@keras.saving.register_keras_serializable(package="hier_models")
class AE(SingleLayerModel):
    """Deterministic autoencoder: loss = reconstruction negative log-likelihood.

    The "Flat AE" baseline of Ross & Doshi-Velez (2021, section 7) and, with
    ``activation="softplus"``, the smooth autoencoder whose codes MIMOSA decomposes
    (section 5, "Dimensionality Reduction"; ReLU corners break the local SVDs).
    Metrics: ``loss``, ``reconstruction``.

    Args:
      input_shape: shape of one observation, e.g. ``(64,)`` or ``(64, 64, 1)``.
      latent_dim: number of code dimensions, default 10; MIMOSA's initial autoencoder
        uses the data's largest intrinsic dimensionality plus one (appendix A.3,
        ``initial_dim``).
      **kwargs: the network options ``architecture``, ``activation``, ``hidden_units``
        (see :class:`~hier_models.single_layer.SingleLayerModel`) and ``likelihood``,
        ``observation_std``, ``random_state``, ``name``, ``trainable`` (see
        :class:`~hier_models.base.Autoencoder`).

    Raises:
      ValueError: an invalid argument (the message names it).

    Example:
      >>> import keras, numpy as np
      >>> from hier_models import AE
      >>> keras.utils.set_random_seed(0)
      >>> x = np.random.default_rng(0).normal(size=(32, 16)).astype("float32")
      >>> model = AE((16,), latent_dim=3, activation="softplus", hidden_units=(8,), random_state=0)
      >>> model.compile(optimizer="adam")
      >>> history = model.fit(x, batch_size=16, epochs=1, verbose=0)  # two steps
      >>> model.step, model.encode(x).shape, model.decode(model.encode(x)).shape
      (2, (32, 3), (32, 16))
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
