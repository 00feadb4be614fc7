"""hier_models: Keras 3 models for hierarchical disentanglement.

Models (``keras.Model`` subclasses, trained with ``compile`` / ``fit``, saved as
``.keras`` and restored by ``keras.models.load_model`` once this package is
imported):

- :class:`AE`, :class:`VAE` (``beta``: beta-VAE), :class:`BetaTCVAE`,
  :class:`FactorVAE`: single-layer models, ``Model(input_shape, latent_dim=10, ...)``;
- :class:`ProVLAE`, :class:`ProLVAE`: progressive ladders, 3 layers x 4 latents by
  default (``latents_per_layer=``);
- :class:`COFHAE`: the hierarchical autoencoder of Ross & Doshi-Velez (2021) on a
  given :class:`~hier_datasets.Hierarchy`; :func:`mimosa` learns the hierarchy from
  codes and :func:`fit_hierarchical` runs the whole method (smooth AE -> MIMOSA ->
  COFHAE). ``hier_models.mimosa`` is that function; the rest of its module is
  imported by name (``from hier_models.mimosa import fit_mimosa, INITIAL_DIM``).

Each has ``encode(x) -> np.ndarray`` (posterior means) and reports its loss terms as
Keras metrics. Network builders (:func:`build_encoder`, :func:`build_decoder`,
:func:`build_ladder`) are public for reuse; :func:`pipeline` makes the TFDS input
pipeline (imported on first use, as it loads TensorFlow Datasets).
"""
from hier_models.architectures import ARCHITECTURES, architecture_spec, default_architecture
from hier_models.base import Autoencoder
from hier_models.ae import AE
from hier_models.vae import VAE
from hier_models.beta_tcvae import BetaTCVAE
from hier_models.factor_vae import FactorVAE, build_discriminator
from hier_models.ladders import ProLVAE, ProVLAE
from hier_models.cofhae import COFHAE
from hier_models.hierarchical import fit_hierarchical
from hier_models.mimosa import mimosa
from hier_models.networks import LadderNetworks, build_decoder, build_encoder, build_ladder
from hier_models.schedules import LinearRamp, ladder_fade_in

__all__ = [
    "AE",
    "ARCHITECTURES",
    "Autoencoder",
    "BetaTCVAE",
    "COFHAE",
    "FactorVAE",
    "LadderNetworks",
    "LinearRamp",
    "MODELS",
    "ProLVAE",
    "ProVLAE",
    "VAE",
    "architecture_spec",
    "build_decoder",
    "build_discriminator",
    "build_encoder",
    "build_ladder",
    "default_architecture",
    "fit_hierarchical",
    "ladder_fade_in",
    "mimosa",
    "pipeline",
]

#: the flat models by name (COFHAE, which also takes a hierarchy, is not among them)
MODELS = {cls.__name__: cls for cls in (AE, VAE, BetaTCVAE, FactorVAE, ProVLAE, ProLVAE)}


def __getattr__(name):
    if name == "pipeline":
        from hier_models.data import pipeline

        return pipeline
    raise AttributeError(f"module 'hier_models' has no attribute {name!r}")
