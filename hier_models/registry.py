"""The models of the package by name, and the hyperparameters each takes.

- :data:`MODELS`: the flat models by class name (COFHAE, which also takes a
  hierarchy, is not among them); :data:`LADDERS`: those of them that are ladders;
- :data:`HIERARCHICAL`: the name of the whole method of Ross & Doshi-Velez (2021)
  (smooth autoencoder -> MIMOSA -> COFHAE, :func:`hier_models.fit_hierarchical`);
  :data:`MODEL_NAMES`: every name :func:`hier_models.recipes.train` accepts;
- :func:`resolve_model` and :func:`model_parameters`: a name's canonical spelling and
  its hyperparameters with their defaults.
"""
from __future__ import annotations

import inspect

from hier_models._mimosa import DEFAULTS as MIMOSA_DEFAULTS
from hier_models.ae import AE
from hier_models.beta_tcvae import BetaTCVAE
from hier_models.cofhae import COFHAE
from hier_models.factor_vae import FactorVAE
from hier_models.ladders import ProLVAE, ProVLAE
from hier_models.vae import VAE

__all__ = [
    "AUTOENCODER_EPOCHS", "HIERARCHICAL", "LADDERS", "MIMOSA_OPTIONS", "MODELS", "MODEL_NAMES", "model_parameters",
    "resolve_model",
]

#: the flat models by name (COFHAE, which also takes a hierarchy, is not among them)
MODELS = {cls.__name__: cls for cls in (AE, VAE, BetaTCVAE, FactorVAE, ProVLAE, ProLVAE)}
#: the progressive ladders among :data:`MODELS`
LADDERS = ("ProVLAE", "ProLVAE")
#: the whole method (smooth AE -> MIMOSA -> COFHAE) goes by this model name
HIERARCHICAL = "Hierarchical"
#: every model :func:`hier_models.recipes.train` trains
MODEL_NAMES = (*MODELS, HIERARCHICAL)
#: MIMOSA's hyperparameters that the whole method takes besides COFHAE's
MIMOSA_OPTIONS = tuple(k for k, v in MIMOSA_DEFAULTS.items() if not callable(v)) + ("tree",)
#: epochs of the smooth autoencoder: it is cheap, and MIMOSA needs its codes converged
#: (on 20,000 depth2_either examples, 20 epochs give MIMOSA purity 0.67, 60 give 0.96)
AUTOENCODER_EPOCHS = 60
#: options of every flat model besides its constructor's: the Boxhead paper's capacity
#: (None: its small networks on Boxhead, the architecture's default elsewhere)
TRAINING_PARAMETERS = {"capacity": None}

#: constructor arguments that training sets itself (or that are internal)
_NOT_HYPERPARAMETERS = {"self", "input_shape", "random_state", "heads", "dataset_size", "hierarchy", "training_steps"}


def resolve_model(name: str) -> str:
    """The model's canonical name (case-insensitive), or ValueError."""
    if not isinstance(name, str):
        raise TypeError(f"model name must be a string, got {type(name).__name__}")
    canonical = {m.lower(): m for m in MODEL_NAMES}.get(name.lower())
    if canonical is None:
        raise ValueError(f"unknown model {name!r}; choose from {', '.join(MODEL_NAMES)}")
    return canonical


def _constructor_parameters(cls) -> dict:
    """Keyword arguments of ``cls`` and of the package's base classes it forwards
    ``**kwargs`` to, with their defaults (None where there is none)."""
    out = {}
    for klass in cls.__mro__:
        if "__init__" not in vars(klass) or not klass.__module__.startswith("hier_models"):
            continue
        for name, p in inspect.signature(klass.__init__).parameters.items():
            if p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL) or name in _NOT_HYPERPARAMETERS or name in out:
                continue
            out[name] = None if p.default is inspect.Parameter.empty else p.default
    return out


def model_parameters(model: str) -> dict:
    """Hyperparameters of ``model`` (a canonical name), with their defaults: for a flat
    model its constructor's and ``capacity``; for :data:`HIERARCHICAL` COFHAE's,
    MIMOSA's and the smooth autoencoder's ``initial_dim``."""
    if model == HIERARCHICAL:
        params = _constructor_parameters(COFHAE)
        params.update({k: MIMOSA_DEFAULTS.get(k, "ball") for k in MIMOSA_OPTIONS}, initial_dim=None)
        return params
    return {**_constructor_parameters(MODELS[model]), **TRAINING_PARAMETERS}
