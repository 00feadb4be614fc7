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
  COFHAE). :func:`fit_mimosa` (:class:`MimosaResult`: MIMOSA with its intermediate
  results), :data:`MIMOSA_DEFAULTS`, :data:`PAPER_SETTINGS` and
  :func:`paper_settings` (the paper's ``initial_dim`` and MIMOSA options of a
  dataset) come from the private subpackage ``hier_models._mimosa``. MIMOSA
  raises :class:`NoHierarchyFound` (a ``ValueError``) when no component of the
  codes survives its size filters.

Each has ``encode(x) -> np.ndarray`` (posterior means) and reports its loss terms as
Keras metrics. Network builders (:func:`build_encoder`, :func:`build_decoder`,
:func:`build_ladder`) are public for reuse; :func:`pipeline` makes the TFDS input
pipeline (imported on first use, as it loads TensorFlow Datasets).

Training and scoring without the command line: :mod:`hier_models.registry` (the
models by name, :data:`MODELS`), :mod:`hier_models.training` (the paper's schedule on
numpy arrays), :mod:`hier_models.protocols` (the Boxhead paper's protocol),
:mod:`hier_models.splits` (a built split as arrays), :mod:`hier_models.recipes`
(``train`` a registered model with its protocol, ``score`` codes with every metric;
it imports :mod:`hier_metrics`, which ``import hier_models`` does not) and
:class:`FitProgress` (:mod:`hier_models.progress`). The ``hierbench`` command line is
the app package :mod:`hierbench`, on top of this one; nothing here imports it or
matplotlib.
"""

# _dependencies first: one clear ImportError where the light install lacks TensorFlow
from hier_datasets.validation import check_public_keywords
from hier_models import _dependencies, _mimosa  # noqa: F401
from hier_models._mimosa import DEFAULTS as MIMOSA_DEFAULTS
from hier_models._mimosa import PAPER_SETTINGS, MimosaResult, NoHierarchyFound, fit_mimosa, mimosa, paper_settings
from hier_models.ae import AE
from hier_models.architectures import ARCHITECTURES, architecture_spec, default_architecture
from hier_models.base import Autoencoder
from hier_models.beta_tcvae import BetaTCVAE
from hier_models.cofhae import COFHAE
from hier_models.factor_vae import FactorVAE, build_discriminator
from hier_models.hierarchical import fit_hierarchical
from hier_models.ladders import ProLVAE, ProVLAE
from hier_models.networks import LadderNetworks, build_decoder, build_encoder, build_ladder
from hier_models.progress import FitProgress
from hier_models.registry import MODELS
from hier_models.schedules import LinearRamp, ladder_fade_in
from hier_models.vae import VAE

__all__ = [
    "AE",
    "ARCHITECTURES",
    "Autoencoder",
    "BetaTCVAE",
    "COFHAE",
    "FactorVAE",
    "FitProgress",
    "LadderNetworks",
    "LinearRamp",
    "MIMOSA_DEFAULTS",
    "MODELS",
    "MimosaResult",
    "NoHierarchyFound",
    "PAPER_SETTINGS",
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
    "fit_mimosa",
    "ladder_fade_in",
    "mimosa",
    "paper_settings",
    "pipeline",
]



check_public_keywords(globals())  # a misspelt keyword lists the options taken


def __getattr__(name):
    if name == "pipeline":
        from hier_models import data

        globals()["pipeline"] = data.pipeline
        check_public_keywords(globals())  # now that it is here
        return globals()["pipeline"]
    raise AttributeError(f"module 'hier_models' has no attribute {name!r}")
