"""The base of the single-layer models (AE, VAE, beta-TCVAE, FactorVAE): one encoder
and one decoder network around :class:`hier_models.base.Autoencoder`."""
from __future__ import annotations

from hier_datasets.validation import check_positive_int
from hier_models.architectures import architecture_spec
from hier_models.base import Autoencoder
from hier_models.networks import build_decoder, build_encoder

__all__ = ["SingleLayerModel"]


class SingleLayerModel(Autoencoder):
    """Base of the single-layer models: one encoder and one decoder network.

    The encoder has ``encoder_heads * latent_dim`` outputs (a class attribute: 1 for
    deterministic codes, 2 for a Gaussian posterior's means and log variances); the
    networks come from :func:`hier_models.networks.build_encoder` and
    :func:`~hier_models.networks.build_decoder`.

    Args:
      input_shape: shape of one observation (see :class:`Autoencoder`).
      latent_dim: number of latent dimensions, default 10 (the disentanglement_lib
        setting; the Boxhead paper, section 5, uses 12 for every model).
      architecture: one of :data:`hier_models.architectures.ARCHITECTURES`. Default
        (None): ``"mlp"`` for 1-D observations (two hidden layers of 256, Ross &
        Doshi-Velez 2021, appendix A.1) and ``"burgess"`` for 64x64 images (the
        7-layer convolutional network of Burgess et al. 2018, same appendix);
        ``"boxhead_small"`` / ``"boxhead_large"`` are the Boxhead paper's appendix B.2
        networks.
      activation: any Keras activation name for the hidden layers. Default (None): the
        architecture's (ReLU, or leaky ReLU for the Boxhead networks); ``"softplus"``
        keeps the codes smooth, as MIMOSA's initial autoencoder needs (Ross &
        Doshi-Velez 2021, section 5 and appendix A.1).
      hidden_units: widths of the ``"mlp"`` hidden layers, default ``(256, 256)``;
        refused by the convolutional architectures.
      **kwargs: ``likelihood``, ``observation_std``, ``random_state``, ``name`` and
        ``trainable`` (see :class:`Autoencoder`).

    Raises:
      ValueError: a ``latent_dim`` below 1, an unknown ``architecture``, or an
        architecture that does not fit ``input_shape`` or ``hidden_units``.
    """

    #: encoder outputs per latent dimension (set by subclasses)
    encoder_heads: int = 1

    def __init__(
        self,
        input_shape,
        latent_dim: int = 10,
        *,
        architecture: str | None = None,
        activation: str | None = None,
        hidden_units=None,
        **kwargs,
    ):
        super().__init__(input_shape, **kwargs)
        self.latent_dim = check_positive_int(latent_dim, "latent_dim")
        spec = architecture_spec(architecture, self.observation_shape, hidden_units=hidden_units)
        self.architecture = spec.name
        options = dict(architecture=spec.name, activation=activation, hidden_units=hidden_units)
        self.encoder = build_encoder(
            self.observation_shape, self.encoder_heads * self.latent_dim, name="encoder", **options
        )
        self.decoder = build_decoder(self.observation_shape, self.latent_dim, name="decoder", **options)
        self._config.update(
            dict(
                latent_dim=self.latent_dim,
                architecture=spec.name,
                activation=activation,
                hidden_units=None if hidden_units is None else list(hidden_units),
            )
        )

    def _decode_tensor(self, z):
        return self.decoder(z, training=False)
