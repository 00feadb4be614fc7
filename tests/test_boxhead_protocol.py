"""The Boxhead paper's protocol (Chen et al. 2022, section 5, appendix B.2): 12 codes
for every model, the small / large networks, the timetable shrunk to a short run,
and the command line using it by default on Boxhead."""
from __future__ import annotations

import numpy as np
import pytest

import hier_datasets
import hier_models
from hier_models import protocols
from hier_models.architectures import CAPACITIES, capacity_architecture
from hier_models.protocols import boxhead_protocol
from hier_models.recipes import train
from hier_models.splits import SplitArrays
from hierbench.options import parse_options

MODELS = tuple(hier_models.MODELS)


def _codes(settings: dict) -> int:
    return settings.get("latent_dim") or sum(settings["latents_per_layer"])


def test_capacities_name_the_paper_architectures():
    assert CAPACITIES == {"small": "boxhead_small", "large": "boxhead_large"}
    assert capacity_architecture("large") == "boxhead_large"
    assert capacity_architecture("small", "boxhead_small") == "boxhead_small"
    with pytest.raises(ValueError, match="capacity"):
        capacity_architecture("medium")
    with pytest.raises(ValueError, match="architecture='burgess'"):
        capacity_architecture("small", "burgess")


def test_timetable_is_the_papers_in_long_runs_and_shrinks_in_short_ones():
    assert protocols.schedule_steps(200_000) == protocols.PAPER_STEPS
    assert protocols.schedule_steps(25_000) == protocols.PAPER_STEPS  # 15,000 = 60% of 25,000
    assert protocols.schedule_steps(2_000) == {"single_layer_anneal": 800, "top_anneal": 400, "fade_in": 400,
                                               "stage": 400}
    assert protocols.schedule_steps(None) == pytest.approx(
        {"single_layer_anneal": 0.4, "top_anneal": 0.2, "fade_in": 0.2, "stage": 0.2})
    assert protocols.schedule_steps(1) == {"single_layer_anneal": 1, "top_anneal": 1, "fade_in": 1, "stage": 1}
    with pytest.raises(ValueError, match="training_steps"):
        protocols.schedule_steps(0)
    assert protocols.training_steps(100_000, 32, 10) == 31_250


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("capacity", ["small", "large"])
def test_every_model_gets_12_codes_and_the_capacitys_networks(model, capacity):
    settings = protocols.boxhead_settings(model, capacity, 2_000)
    assert _codes(settings) == 12
    assert settings["architecture"] == CAPACITIES[capacity]
    if model in ("ProVLAE", "ProLVAE"):
        assert settings["latents_per_layer"] == (4, 4, 4)
        assert (settings["beta_anneal_steps"], settings["fade_in_steps"], settings["stage_steps"]) == (400, 400, 400)
        assert settings["beta_start"] == 150.0 and settings["gamma"] == 0.0
    elif model in ("VAE", "BetaTCVAE"):
        assert settings["beta_anneal_steps"] == 800 and settings["beta_start"] == 200.0
        assert "gamma" not in settings  # beta-TCVAE's gamma weighs its dimension-wise KL
    else:
        assert "beta_anneal_steps" not in settings and "beta_start" not in settings


@pytest.mark.parametrize("model", MODELS)
def test_protocol_models_anneal_beta_down_as_the_authors_did(model):
    """The authors' jobs: beta from 200 to beta over 10,000 steps (single-layer models),
    from 150 over 5,000 (the ladders' top layer), linearly from step 0."""
    assert protocols.BETA_START == {"single_layer": 200.0, "top": 150.0} and protocols.GAMMA == 0.0
    if model not in protocols.STUDY_MODELS:
        return
    settings = protocols.boxhead_settings(model, "small", 200_000)
    built = hier_models.MODELS[model]((64, 64, 3), beta=5.0, random_state=0, **{**settings, "architecture": "burgess"})
    start, anneal = (150.0, 5_000) if model in ("ProVLAE", "ProLVAE") else (200.0, 10_000)
    for t in (0, anneal // 4, anneal // 2, anneal, 2 * anneal):
        assert built.schedule(t)["beta"] == pytest.approx(start + (5.0 - start) * min(1.0, t / anneal))
    assert built.schedule(anneal // 2)["beta"] == pytest.approx((start + 5.0) / 2)


def test_bad_protocol_arguments_are_named():
    with pytest.raises(ValueError, match="capacity"):
        protocols.boxhead_settings("VAE", "huge")
    with pytest.raises(ValueError, match="model"):
        protocols.boxhead_settings("COFHAE")
    with pytest.raises(ValueError, match="capacity=large"):
        boxhead_protocol("VAE", {"capacity": "tiny"}, latent_dim=None, training_steps=10)


def test_command_line_options_override_the_protocol():
    options = parse_options(["capacity=large", "VAE.beta_anneal_steps=5"], ["VAE", "ProVLAE"])
    vae = boxhead_protocol("VAE", options["VAE"], latent_dim=None, training_steps=2_000)
    assert vae == {"architecture": "boxhead_large", "latent_dim": 12, "beta_anneal_steps": 5, "beta_start": 200.0}
    # a constant beta drops the start value; beta_start=None (--set beta_start=null) warms up from 0
    constant = boxhead_protocol("VAE", {"beta_anneal_steps": 0}, latent_dim=None, training_steps=2_000)
    assert constant["beta_anneal_steps"] == 0 and "beta_start" not in constant
    warm = boxhead_protocol("ProLVAE", parse_options(["beta_start=null", "gamma=1"], ["ProLVAE"])["ProLVAE"],
                            latent_dim=None, training_steps=2_000)
    assert warm["beta_start"] is None and warm["gamma"] == 1
    ladder = boxhead_protocol("ProVLAE", {"fade_in_steps": 0.1}, latent_dim=6, training_steps=2_000)
    assert "latents_per_layer" not in ladder and ladder["fade_in_steps"] == 0.1
    assert boxhead_protocol("AE", {"architecture": "burgess"}, latent_dim=None, training_steps=9)["architecture"] == "burgess"


def _fake_boxhead(n=8) -> SplitArrays:
    """Boxhead-shaped arrays (random images) under the boxhead1 name."""
    gt = hier_datasets.ground_truth("boxhead/boxhead1")
    rng = np.random.default_rng(0)
    k = len(gt.factor_names)
    return SplitArrays(
        dataset=f"boxhead/boxhead1_{n}_{n}", split="train",
        observations=rng.integers(0, 256, (n, 64, 64, 3), dtype=np.uint8),
        factors=rng.uniform(0, 1, (n, k)), active=np.ones((n, k), bool), paths=np.zeros(n, np.int64),
        hierarchy=gt.hierarchy, scale=1 / 255,
    )


def _check_trained(model_name: str, data: SplitArrays):
    trained = train(model_name, data, epochs=1, batch_size=4, random_state=0, show_progress=False)
    model = trained.model
    assert model.latent_dim == 12 and trained.settings["latent_dim"] == 12
    assert model.architecture == "boxhead_small" and trained.settings["protocol"] == "boxhead"
    assert type(model.optimizer).__name__ == "Adamax"
    assert float(model.optimizer.learning_rate.numpy()) == pytest.approx(protocols.LEARNING_RATE)
    assert model.step == 2
    assert model.encode(data.observations.astype(np.float32) / 255).shape == (len(data), 12)
    return trained


@pytest.mark.slow
def test_command_line_trains_a_flat_model_with_the_protocol_on_boxhead():
    trained = _check_trained("BetaTCVAE", _fake_boxhead())
    # 2 steps: the single-layer anneal shrinks to round(10,000 x 0.6 x 2 / 15,000) = 1 step
    assert trained.model.beta_anneal_steps == 1 and trained.settings["model_options"]["beta_anneal_steps"] == 1


@pytest.mark.slow
@pytest.mark.parametrize("model_name", MODELS)
def test_command_line_gives_12_codes_for_every_model_on_boxhead(model_name):
    _check_trained(model_name, _fake_boxhead())
