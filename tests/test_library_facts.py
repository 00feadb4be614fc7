"""hierbench.library_facts reads from the model library's source what the imported
library says: every fact the commands' help and defaults show."""
from __future__ import annotations

import pytest

from hier_models import distribute, hierarchical, protocols, registry
from hierbench import library_facts
from hierbench.settings import DEFAULT_RUN


def test_model_names_and_hyperparameters_match_the_library():
    assert library_facts.model_names() == registry.MODEL_NAMES
    assert library_facts.mimosa_options() == registry.MIMOSA_OPTIONS
    for model in registry.MODEL_NAMES:
        assert library_facts.hyperparameter_names(model) == tuple(sorted(registry.model_parameters(model))), model


@pytest.mark.parametrize("module, names", [
    (registry, ["HIERARCHICAL", "AUTOENCODER_EPOCHS", "TRAINING_PARAMETERS"]),
    (distribute, ["STRATEGIES"]),
    (hierarchical, ["PAPER_GRID"]),
    (protocols, ["PAPER_STEPS", "BETA_START", "LEARNING_RATE", "LATENT_DIM", "LATENTS_PER_LAYER", "GAMMA",
                 "SCHEDULE_SHARE"]),
])
def test_constants_match_the_library(module, names):
    for name in names:
        assert library_facts.constant(module.__name__, name) == getattr(module, name), name


def test_the_default_run_uses_the_library_defaults():
    assert DEFAULT_RUN.autoencoder_epochs == registry.AUTOENCODER_EPOCHS
    assert registry.HIERARCHICAL in DEFAULT_RUN.models
    assert f"{len(hierarchical.grid_points())}-run grid" in DEFAULT_RUN.__class__(halving=True).describe()


def test_unknown_names_are_refused():
    with pytest.raises(ValueError, match="unknown model 'Flat'; choose from AE, VAE"):
        library_facts.hyperparameter_names("Flat")
    with pytest.raises(LookupError, match="hier_models.registry assigns no NOT_THERE"):
        library_facts.constant(library_facts.REGISTRY, "NOT_THERE")
