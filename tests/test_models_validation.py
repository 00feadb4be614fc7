"""Bad input raises a ValueError that names the problem."""
from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

import hier_models

SINGLE = [hier_models.AE, hier_models.VAE, hier_models.BetaTCVAE, hier_models.FactorVAE]
LADDERS = [hier_models.ProVLAE, hier_models.ProLVAE]
ALL = SINGLE + LADDERS


@pytest.mark.parametrize("cls", ALL)
@pytest.mark.parametrize(
    "shape, match",
    [
        ((32, 32, 1), r"input_shape \(32, 32, 1\)"),
        ((64, 64), r"input_shape \(64, 64\)"),
        ((), "input_shape"),
        ((64, 0), "input_shape"),
        ("64", "input_shape"),
        (None, "input_shape"),
    ],
)
def test_wrong_input_shape(cls, shape, match):
    with pytest.raises(ValueError, match=match):
        cls(shape)


@pytest.mark.parametrize("cls", SINGLE)
@pytest.mark.parametrize("latent_dim", [0, -3, 2.5, True, "4"])
def test_latent_dim_below_one(cls, latent_dim):
    with pytest.raises(ValueError, match="latent_dim"):
        cls((64,), latent_dim=latent_dim)


@pytest.mark.parametrize("cls", [hier_models.VAE, hier_models.BetaTCVAE, hier_models.FactorVAE] + LADDERS)
@pytest.mark.parametrize("beta", [-0.5, float("nan"), float("inf"), "1"])
def test_negative_or_invalid_beta(cls, beta):
    with pytest.raises(ValueError, match="beta"):
        cls((64,), beta=beta)


@pytest.mark.parametrize(
    "cls, kwargs, match",
    [
        (hier_models.BetaTCVAE, {"alpha": -1.0}, "alpha"),
        (hier_models.BetaTCVAE, {"gamma": -1.0}, "gamma"),
        (hier_models.BetaTCVAE, {"dataset_size": 0}, "dataset_size"),
        (hier_models.FactorVAE, {"gamma": -10.0}, "gamma"),
        (hier_models.FactorVAE, {"discriminator_units": (64, 0)}, "discriminator_units"),
        (hier_models.VAE, {"beta_anneal_steps": -1}, "beta_anneal_steps"),
        (hier_models.VAE, {"architecture": "resnet"}, "architecture"),
        (hier_models.VAE, {"hidden_units": (0,)}, "hidden_units"),
        (hier_models.AE, {"likelihood": "poisson"}, "likelihood"),
        (hier_models.AE, {"observation_std": 0.0}, "observation_std"),
        (hier_models.AE, {"random_state": -1}, "random_state"),
        (hier_models.ProVLAE, {"latents_per_layer": (4, 0, 4)}, "latents_per_layer"),
        (hier_models.ProVLAE, {"latents_per_layer": ()}, "latents_per_layer"),
        (hier_models.ProVLAE, {"latent_dim": 10}, "latent_dim"),
        (hier_models.ProVLAE, {"latent_dim": 0}, "latent_dim"),
        (hier_models.ProVLAE, {"latent_dim": 12, "latents_per_layer": (2, 2, 2)}, "latent_dim"),
        (hier_models.ProVLAE, {"num_layers": 0}, "num_layers"),
        (hier_models.ProVLAE, {"latents_per_layer": (4, 4), "num_layers": 3}, "num_layers"),
        (hier_models.ProLVAE, {"fade_in_steps": -5}, "fade_in_steps"),
        (hier_models.ProLVAE, {"stage_steps": -5}, "stage_steps"),
    ],
)
def test_bad_hyperparameters(cls, kwargs, match):
    with pytest.raises(ValueError, match=match):
        cls((64,), **kwargs)


@pytest.mark.parametrize(
    "cls, kwargs, match",
    [
        (hier_models.VAE, {"hidden_units": (32,)}, "hidden_units"),
        (hier_models.VAE, {"architecture": "mlp"}, "architecture 'mlp'"),
        (hier_models.ProVLAE, {"num_layers": 2}, "3 ladder layers"),
        (hier_models.ProLVAE, {"latents_per_layer": (4, 4), "architecture": "boxhead_small"}, "3 ladder layers"),
    ],
)
def test_architecture_mismatches(cls, kwargs, match):
    with pytest.raises(ValueError, match=match):
        cls((64, 64, 1), **kwargs)


def test_series_architecture_refuses_images_and_vice_versa():
    with pytest.raises(ValueError, match="architecture 'burgess'"):
        hier_models.AE((64,), architecture="burgess")
    with pytest.raises(ValueError, match="boxhead_small"):
        hier_models.build_encoder((64, 64), 8, architecture="boxhead_small")


@pytest.fixture(scope="module")
def vae():
    model = hier_models.VAE((64,), latent_dim=3, hidden_units=(16,), random_state=0)
    model.compile()
    return model


def test_fit_on_observations_of_the_wrong_shape(vae):
    with pytest.raises(ValueError, match=r"observations of shape \(64,\).*\(n, 32\)"):
        vae.fit(np.zeros((8, 32), np.float32), batch_size=4, verbose=0)


def test_fit_on_dict_batches_says_what_to_feed(vae):
    ds = tf.data.Dataset.from_tensor_slices({"series": np.zeros((8, 64), np.float32)}).batch(4)
    with pytest.raises(ValueError, match="pipeline"):
        vae.fit(ds, verbose=0)


def test_fit_on_integer_observations_is_refused(vae):
    ds = tf.data.Dataset.from_tensor_slices(np.zeros((8, 64), np.uint8)).batch(4)
    with pytest.raises(ValueError, match="floats"):
        vae.fit(ds, verbose=0)


def test_encode_checks_shape_and_values(vae):
    with pytest.raises(ValueError, match=r"x must have shape \(n, 64\)"):
        vae.encode(np.zeros((5, 63), np.float32))
    with pytest.raises(ValueError, match="floats"):
        vae.encode(np.zeros((5, 64), np.uint8))
    with pytest.raises(ValueError, match=r"z must have shape \(n, 3\)"):
        vae.decode(np.zeros((5, 4), np.float32))


def test_encode_refuses_unscaled_images_for_a_bernoulli_likelihood():
    model = hier_models.AE((64, 64, 1), latent_dim=2, random_state=0)
    images = np.zeros((2, 64, 64, 1), np.float32)
    images[0, 0, 0, 0] = 255.0
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        model.encode(images)


def test_compile_refuses_a_loss(vae):
    with pytest.raises(ValueError, match="own loss"):
        vae.compile(optimizer="adam", loss="mse")
    with pytest.raises(ValueError, match="own loss"):
        vae.compile(metrics=["mae"])
