"""``.keras`` save / load: configs that hold every constructor argument, identical
encodings, and training that resumes exactly where it stopped (step counter, schedules,
both optimisers, sampling noise)."""
from __future__ import annotations

import inspect
import json

import keras
import numpy as np
import pytest
import tensorflow as tf

import hier_datasets
import hier_models
from hier_datasets.hierarchy import Categorical, Group, Hierarchy

SCHEDULE = {"beta_anneal_steps": 12}
CASES = [
    (hier_models.AE, {"latent_dim": 4}),
    (hier_models.VAE, {"latent_dim": 4, "beta": 2.0, **SCHEDULE}),
    # beta-TCVAE and pro-LVAE anneal beta down from a start value, the others warm it up from 0
    (hier_models.BetaTCVAE, {"latent_dim": 4, "dataset_size": 1000, "beta_start": 20.0, **SCHEDULE}),
    (hier_models.FactorVAE, {"latent_dim": 4, "discriminator_units": (64, 64), **SCHEDULE}),
    # layer 2 fades in over steps 4-8, layer 1 over 8-12: both cross the save at step 8
    (hier_models.ProVLAE, {"fade_in_steps": 4, **SCHEDULE}),
    (hier_models.ProLVAE, {"fade_in_steps": 4, "beta_start": 30.0, **SCHEDULE}),
]


def constructor_arguments(cls) -> list[str]:
    """Every argument a model's constructor takes: its own named parameters, those of
    the hierbench base classes it forwards ``**kwargs`` to, and Keras' ``name`` and
    ``trainable``."""
    names = []
    for klass in cls.__mro__:
        if "__init__" not in vars(klass):
            continue
        if not klass.__module__.startswith("hier_models"):
            return names + ["name", "trainable"]
        params = inspect.signature(klass.__init__).parameters.values()
        names += [p.name for p in params if p.name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
                  and p.name not in names]
        if not any(p.kind == p.VAR_KEYWORD for p in params):
            return names
    return names


TINY_HIERARCHY = Hierarchy(Group(("x",), Categorical("kind", (("a", Group(("u",))), ("b", Group(("v",)))))))
#: a value other than the default for every constructor argument of every model
NON_DEFAULT = {
    "input_shape": (16,),
    "latent_dim": 6,
    "architecture": "mlp",
    "activation": "tanh",
    "hidden_units": (8, 8),
    "likelihood": "bernoulli",
    "observation_std": 0.5,
    "random_state": 3,
    "name": "configured",
    "trainable": False,
    "beta": 2.5,
    "beta_anneal_steps": 7,
    "beta_start": 40.0,
    "alpha": 0.5,
    "gamma": 3.0,
    "dataset_size": 100,
    "estimator": "mss",
    "discriminator_units": (8, 4),
    "tc_rows": 5,
    "discriminator_dtype": "float32",
    "latents_per_layer": (1, 2, 3),
    "num_layers": 3,
    "fade_in_steps": 2,
    "stage_steps": 4,
    "encoder_fade_in": False,
    "training_steps": 50,
    "hierarchy": TINY_HIERARCHY,
    "tau": 0.5,
    "lambda_assign": 1.0,
    "lambda_tc": 2.0,
    "ablation": "H+A",
    "decoder_assignments": "straight_through",
    "assignment_probabilities": "softmax",
}
ALL_MODELS = [*hier_models.MODELS.values(), hier_models.COFHAE]


@pytest.mark.parametrize("cls", ALL_MODELS, ids=[c.__name__ for c in ALL_MODELS])
def test_config_holds_every_constructor_argument(cls):
    arguments = constructor_arguments(cls)
    assert {"input_shape", "random_state", "name"} <= set(arguments)
    missing = sorted(set(arguments) - set(NON_DEFAULT))
    assert not missing, f"give {cls.__name__}'s new arguments {missing} a non-default value in NON_DEFAULT"
    given = {name: NON_DEFAULT[name] for name in arguments}
    config = cls(**given).get_config()
    assert not set(arguments) - set(config), f"{cls.__name__}.get_config() misses {set(arguments) - set(config)}"
    assert not set(config) - set(arguments), f"{cls.__name__}.get_config() has extra {set(config) - set(arguments)}"
    for name, value in given.items():
        expected = value.to_json() if isinstance(value, Hierarchy) else json.loads(json.dumps(value))
        assert config[name] == expected, name
    assert json.loads(json.dumps(config)) == config, "the config is plain JSON"
    assert cls.from_config(config).get_config() == config


@pytest.fixture(scope="module")
def series():
    _, x = hier_datasets.ground_truth("chopsticks/depth2_either").sample(128, random_state=0)
    return x.astype(np.float32)


def _trained(cls, kwargs, data, epochs):
    keras.utils.set_random_seed(0)
    model = cls((64,), random_state=5, hidden_units=(64,), **kwargs)
    model.compile(optimizer="adam")
    model.fit(data, epochs=epochs, verbose=0)
    return model


@pytest.mark.parametrize("cls, kwargs", CASES, ids=[c.__name__ for c, _ in CASES])
def test_save_load_and_resume(cls, kwargs, series, tmp_path):
    data = tf.data.Dataset.from_tensor_slices(series).batch(32)  # fixed order: runs are comparable
    continuous = _trained(cls, kwargs, data, epochs=4)
    first_half = _trained(cls, kwargs, data, epochs=2)
    path = tmp_path / "model.keras"
    first_half.save(path)

    loaded = keras.models.load_model(path)
    assert type(loaded) is cls
    assert loaded.get_config() == first_half.get_config()
    np.testing.assert_array_equal(loaded.encode(series), first_half.encode(series))
    assert loaded.step == 8 and int(loaded.optimizer.iterations.numpy()) == 8
    assert loaded.schedule() == first_half.schedule()
    if cls is hier_models.FactorVAE:
        assert int(loaded.discriminator_optimizer.iterations.numpy()) == 8
        assert loaded.discriminator_optimizer.get_config() == first_half.discriminator_optimizer.get_config()

    loaded.fit(data, epochs=2, verbose=0)
    assert loaded.step == continuous.step == 16
    assert loaded.schedule() == continuous.schedule()
    for a, b in zip(continuous.weights, loaded.weights):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6, err_msg=a.path)
    np.testing.assert_allclose(loaded.encode(series), continuous.encode(series), rtol=1e-5, atol=1e-5)


def test_image_model_round_trip(tmp_path):
    _, images = hier_datasets.ground_truth("spaceshapes").sample(32, random_state=0)
    images = images.astype(np.float32)
    model = hier_models.ProLVAE((64, 64, 1), architecture="burgess", fade_in_steps=2, random_state=3)
    model.compile()
    model.fit(images, batch_size=8, epochs=1, verbose=0)
    model.save(tmp_path / "ladder.keras")
    loaded = keras.models.load_model(tmp_path / "ladder.keras")
    np.testing.assert_array_equal(loaded.encode(images), model.encode(images))
    codes = model.encode(images[:4])
    np.testing.assert_array_equal(loaded.decode(codes), model.decode(codes))
    assert [len(x) for x in loaded.encode_layers(images[:2])] == [2, 2, 2]
    assert [x.shape[1] for x in loaded.encode_layers(images[:2])] == [4, 4, 4]


def test_uncompiled_model_round_trips_and_can_then_be_compiled(tmp_path, series):
    model = hier_models.AE((64,), latent_dim=3, activation="softplus", random_state=1)
    model.save(tmp_path / "ae.keras")
    loaded = keras.models.load_model(tmp_path / "ae.keras")
    np.testing.assert_array_equal(loaded.encode(series), model.encode(series))
    assert loaded.get_config()["activation"] == "softplus"
    loaded.compile()
    loaded.fit(series, batch_size=64, epochs=1, verbose=0)
    assert loaded.step == 2


def test_random_state_is_recorded_when_drawn_at_random():
    model = hier_models.VAE((64,), latent_dim=2)
    assert isinstance(model.get_config()["random_state"], int)
    assert hier_models.VAE.from_config(model.get_config()).random_state == model.random_state


def _one_step(cls, series, **seeding):
    """``cls`` built on tiny networks after ``keras.utils.set_random_seed(0)`` (the
    initial weights) and trained one step on a fixed batch (the sampling noise and the
    TC permutations come from the model's seed)."""
    options = {"hidden_units": (8,), "name": "model"}
    if cls is hier_models.COFHAE:
        options.update(hierarchy=TINY_HIERARCHY, ablation="H+TC(Z|on)", discriminator_units=(8,))
    elif cls is hier_models.FactorVAE:
        options["discriminator_units"] = (8,)
    keras.utils.set_random_seed(0)
    model = cls((64,), **options, **seeding)
    model.compile(optimizer="adam")
    model.fit(series[:16], batch_size=16, epochs=1, verbose=0)
    return model


def test_random_state_sets_the_noise_and_is_checked(series):
    first, other = (_one_step(hier_models.VAE, series, random_state=s) for s in (4, 5))
    # same initial weights, other sampling noise: the first step moves the weights differently
    assert any(not np.array_equal(a.numpy(), b.numpy()) for a, b in zip(first.weights, other.weights))
    drawn = _one_step(hier_models.VAE, series, random_state=np.random.default_rng(0))
    assert drawn.random_state == hier_datasets.validation.check_seed(np.random.default_rng(0))
    with pytest.raises(TypeError, match="random_state must be an integer seed >= 0 or a numpy Generator"):
        hier_models.AE((64,), random_state="one")
    with pytest.raises(ValueError, match="random_state must be an integer seed >= 0"):
        hier_models.AE((64,), random_state=-1)
