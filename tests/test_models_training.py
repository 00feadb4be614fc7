"""Every model learns on a few hundred real examples; codes are finite and well shaped."""
from __future__ import annotations

import math
import warnings

import keras
import numpy as np
import pytest

import hier_models
from conftest import CHOPSTICKS, SPACESHAPES

SMALL_DISCRIMINATOR = {"discriminator_units": (256, 256)}
LADDER_OPTIONS = {"fade_in_steps": 16, "beta_anneal_steps": 16}

SERIES_CASES = [
    (hier_models.AE, {}),
    (hier_models.VAE, {"beta": 4.0}),
    (hier_models.BetaTCVAE, {"dataset_size": 512}),
    (hier_models.FactorVAE, SMALL_DISCRIMINATOR),
    (hier_models.ProVLAE, LADDER_OPTIONS),
    (hier_models.ProLVAE, LADDER_OPTIONS),
]
IMAGE_CASES = [
    (hier_models.AE, {}),
    (hier_models.VAE, {"beta": 4.0}),
    (hier_models.BetaTCVAE, {}),
    (hier_models.FactorVAE, SMALL_DISCRIMINATOR),
    (hier_models.ProVLAE, {"architecture": "burgess", **LADDER_OPTIONS}),
    (hier_models.ProLVAE, {"architecture": "burgess", **LADDER_OPTIONS}),
]


def _ids(cases):
    return [cls.__name__ for cls, _ in cases]


def _falls(values, fraction):
    """The last epoch's value is below the first's by at least ``fraction`` of its size."""
    return values[-1] < values[0] - fraction * abs(values[0])


def _train_and_encode(cls, kwargs, name, input_shape, data_dir, epochs, latent_dim, optimizer="adam"):
    train = hier_models.pipeline(name, "train", 32, data_dir=data_dir, random_state=0, with_factors=True)
    test = hier_models.pipeline(name, "test", 64, data_dir=data_dir, shuffle=False)
    args = {} if cls in (hier_models.ProVLAE, hier_models.ProLVAE) else {"latent_dim": latent_dim}
    keras.utils.set_random_seed(0)  # the initial weights: without it the margins vary from run to run
    model = cls(input_shape, random_state=0, **args, **kwargs)
    model.compile(optimizer=optimizer)
    history = model.fit(train, epochs=epochs, verbose=0).history
    codes = model.encode(test)
    return model, history, codes


@pytest.mark.parametrize("cls, kwargs", SERIES_CASES, ids=_ids(SERIES_CASES))
def test_series_loss_falls_and_codes_are_finite(cls, kwargs, tiny_data_dir):
    model, history, codes = _train_and_encode(cls, kwargs, CHOPSTICKS, (64,), tiny_data_dir, 4, 6)
    # Gaussian NLLs can be negative: compare drops, not ratios
    assert _falls(history["reconstruction"], 0.5), history
    assert _falls(history["loss"], 0.5), history
    assert codes.shape == (128, model.latent_dim) and codes.dtype == np.float32
    assert np.all(np.isfinite(codes))
    for term in model.loss_terms:
        assert np.all(np.isfinite(history[term])), term


@pytest.mark.parametrize("cls, kwargs", IMAGE_CASES, ids=_ids(IMAGE_CASES))
def test_spaceshapes_loss_falls_and_codes_are_finite(cls, kwargs, tiny_data_dir):
    model, history, codes = _train_and_encode(cls, kwargs, SPACESHAPES, (64, 64, 1), tiny_data_dir, 2, 6)
    # from 4096 log 2 = 2839 nats per image at initialisation
    assert _falls(history["reconstruction"], 0.05), history
    assert _falls(history["loss"], 0.05), history
    assert codes.shape == (64, model.latent_dim) and np.all(np.isfinite(codes))
    recon = model.decode(codes[:4])
    assert recon.shape == (4, 64, 64, 1) and recon.min() >= 0 and recon.max() <= 1


@pytest.mark.parametrize("cls", [hier_models.VAE, hier_models.ProLVAE], ids=["VAE", "ProLVAE"])
def test_rgb_images_train_and_encode(cls):
    """Uniform noise images: nothing to learn but the mean pixel 0.5, whose Bernoulli NLL
    is ln 2 per value whatever the pixel, so the reconstruction term is 64 * 64 * 3 ln 2
    nats per image (summed over pixels and channels, not averaged)."""
    images = np.random.default_rng(0).random((16, 64, 64, 3)).astype(np.float32)
    kwargs = {"architecture": "burgess"} if cls is hier_models.ProLVAE else {"latent_dim": 5}
    model = cls((64, 64, 3), random_state=0, **kwargs)
    model.compile()
    history = model.fit(images, batch_size=8, epochs=2, verbose=0).history
    assert history["reconstruction"][-1] == pytest.approx(64 * 64 * 3 * math.log(2), rel=1e-3)
    codes = model.encode(images)
    assert codes.shape == (16, model.latent_dim) and np.all(np.isfinite(codes))
    np.testing.assert_array_equal(model.encode(images), codes)  # posterior means: no sampling
    recon = model.decode(codes[:2])
    assert recon.shape == (2, 64, 64, 3) and np.all(np.abs(recon - 0.5) < 0.05)


def test_encode_accepts_arrays_and_datasets_alike(tiny_data_dir):
    model = hier_models.AE((64,), latent_dim=3, random_state=0)
    pairs = hier_models.pipeline(CHOPSTICKS, "test", 50, data_dir=tiny_data_dir, shuffle=False, with_factors=True)
    from_dataset = model.encode(pairs)
    array = np.concatenate([x.numpy() for x, _ in pairs])
    np.testing.assert_allclose(model.encode(array, batch_size=7), from_dataset, rtol=1e-5, atol=1e-6)
    assert model.encode(array[:0]).shape == (0, 3)


def test_fit_shuffles_arrays_but_leaves_pipelines_to_shuffle_themselves(tiny_data_dir):
    train = hier_models.pipeline(CHOPSTICKS, "train", 32, data_dir=tiny_data_dir, random_state=0)
    model = hier_models.AE((64,), latent_dim=3, random_state=0)
    model.compile()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(train, epochs=1, verbose=0)
    assert not [w for w in caught if "shuffle" in str(w.message)]
    x = np.random.default_rng(0).normal(0, 0.3, (256, 64)).astype(np.float32)
    weights = []
    for shuffle in ({}, {"shuffle": False}, {"shuffle": False}):
        twin = hier_models.AE((64,), latent_dim=3, random_state=0)
        twin.set_weights(model.get_weights())
        twin.compile()
        twin.fit(x, batch_size=16, epochs=1, verbose=0, **shuffle)
        weights.append(twin.encoder.get_weights()[0])
    np.testing.assert_array_equal(weights[1], weights[2])  # same order, same result
    assert not np.array_equal(weights[0], weights[1])  # the default shuffled the rows


def test_factor_vae_trains_its_discriminator_with_its_own_optimizer():
    x = np.random.default_rng(0).normal(0, 0.3, (64, 64)).astype(np.float32)
    model = hier_models.FactorVAE((64,), latent_dim=4, hidden_units=(32,), discriminator_units=(32,), random_state=0)
    frozen = hier_models.FactorVAE((64,), latent_dim=4, hidden_units=(32,), discriminator_units=(32,), random_state=0)
    model.compile(optimizer="adam", discriminator_optimizer="sgd")
    frozen.compile(optimizer="adam", discriminator_optimizer={"class_name": "SGD", "config": {"learning_rate": 0.0}})
    for m in (model, frozen):
        m.fit(x, batch_size=16, epochs=2, verbose=0)
        assert int(m.optimizer.iterations.numpy()) == int(m.discriminator_optimizer.iterations.numpy()) == 8
        assert m.step == 8
    # the main optimiser never touches the discriminator; the discriminator's does
    before = hier_models.FactorVAE((64,), latent_dim=4, hidden_units=(32,), discriminator_units=(32,), random_state=0)
    assert not any(np.array_equal(a, b) for a, b in zip(model.discriminator.get_weights(), before.discriminator.get_weights()))
    weights = frozen.discriminator.get_weights()
    frozen.fit(x, batch_size=16, epochs=1, verbose=0)
    for a, b in zip(weights, frozen.discriminator.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(frozen.encoder.get_weights()[0], before.encoder.get_weights()[0])


def test_evaluate_reports_the_same_terms_without_training(tiny_data_dir):
    test = hier_models.pipeline(CHOPSTICKS, "test", 64, data_dir=tiny_data_dir, shuffle=False)
    model = hier_models.BetaTCVAE((64,), latent_dim=4, random_state=0)
    model.compile()
    weights = [w.copy() for w in model.get_weights()]
    result = model.evaluate(test, verbose=0, return_dict=True)
    assert set(result) == set(model.loss_terms) | {"beta"}
    assert model.step == 0
    for a, b in zip(weights, model.get_weights()):
        np.testing.assert_array_equal(a, b)


@pytest.mark.slow
@pytest.mark.parametrize("cls", [hier_models.ProVLAE, hier_models.ProLVAE], ids=["ProVLAE", "ProLVAE"])
def test_boxhead_ladders_learn_spaceshapes(cls, tiny_data_dir):
    # 159M parameters: Adam's first steps at 1e-3 throw the top layer's variances far out
    model, history, codes = _train_and_encode(
        cls,
        {"architecture": "boxhead_small", **LADDER_OPTIONS},
        SPACESHAPES,
        (64, 64, 1),
        tiny_data_dir,
        3,
        12,
        optimizer=keras.optimizers.Adam(1e-4),
    )
    assert _falls(history["reconstruction"], 0.05), history
    assert codes.shape == (64, 12) and np.all(np.isfinite(codes))


@pytest.mark.slow
@pytest.mark.parametrize("cls, kwargs", SERIES_CASES, ids=_ids(SERIES_CASES))
def test_models_train_under_xla(cls, kwargs):
    """jit_compile=True, the default on GPUs: every op of every train step compiles."""
    x = np.random.default_rng(0).normal(0, 0.3, (128, 64)).astype(np.float32)
    model = cls((64,), random_state=0, hidden_units=(32,), **kwargs)
    model.compile(jit_compile=True)
    history = model.fit(x, batch_size=32, epochs=2, verbose=0).history
    assert np.all(np.isfinite(history["loss"])) and model.step == 8
    assert history["reconstruction"][-1] < history["reconstruction"][0]


def test_train_recipe_refuses_a_checkpoint_it_cannot_resume(tmp_path):
    """The hierarchical method resumes only a selection (rungs): a bare checkpoint folder
    is refused before anything trains or is written."""
    import hier_datasets
    from hier_models import recipes
    from hier_models.splits import SplitArrays

    name = "chopsticks/depth2_either"
    gt = hier_datasets.ground_truth(name)
    factors, series = gt.sample(64, 0)
    data = SplitArrays(name, "train", series, factors, gt.active(factors), gt.paths(factors), gt.hierarchy)
    with pytest.raises(recipes.SettingsError, match="otherwise give no checkpoint"):
        recipes.train("Hierarchical", data, epochs=1, checkpoint=tmp_path / "checkpoint")
    assert not (tmp_path / "checkpoint").exists()
