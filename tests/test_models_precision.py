"""Mixed-precision Keras policies: hidden layers in 16 bits, codes and losses in float32."""
from __future__ import annotations

import keras
import numpy as np
import pytest

import hier_models
from hier_datasets import ground_truth

CASES = [
    (hier_models.AE, {}),
    (hier_models.VAE, {}),
    (hier_models.BetaTCVAE, {}),
    (hier_models.FactorVAE, {"discriminator_units": (32,)}),
    # every layer on from the start: a fixed objective, whose loss must fall
    (hier_models.ProVLAE, {"fade_in_steps": 0, "beta_anneal_steps": 0}),
    (hier_models.ProLVAE, {"fade_in_steps": 0, "beta_anneal_steps": 0}),
]


@pytest.fixture
def policy(request):
    keras.mixed_precision.set_global_policy(request.param)
    yield request.param
    keras.mixed_precision.set_global_policy("float32")


def _series(n=256):
    return np.random.default_rng(0).normal(0, 0.3, (n, 64)).astype(np.float32)


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"], indirect=True)
@pytest.mark.parametrize("cls, kwargs", CASES, ids=[cls.__name__ for cls, _ in CASES])
def test_models_train_under_a_mixed_policy(policy, cls, kwargs):
    x = _series()
    model = cls((64,), random_state=0, **kwargs)
    model.compile()
    assert model.dtype_policy.compute_dtype == policy.split("_")[1]
    history = model.fit(x, batch_size=64, epochs=3, verbose=0).history
    for term in model.loss_terms:
        assert np.all(np.isfinite(history[term])), term
    assert history["loss"][-1] < history["loss"][0]
    codes = model.encode(x[:8])
    assert codes.dtype == np.float32 and np.all(np.isfinite(codes))


@pytest.mark.parametrize("policy", ["mixed_bfloat16"], indirect=True)
def test_cofhae_trains_under_a_mixed_policy(policy):
    hierarchy = ground_truth("chopsticks/depth2_either").hierarchy
    model = hier_models.COFHAE((64,), hierarchy, ablation="H+TC(Z|on)", hidden_units=(32,), discriminator_units=(32,),
                               random_state=0)
    model.compile()
    history = model.fit(_series(), batch_size=64, epochs=3, verbose=0).history
    assert np.all(np.isfinite(history["loss"])) and np.all(np.isfinite(history["discriminator_loss"]))
    assert history["loss"][-1] < history["loss"][0]
    codes = model.encode(_series(8))
    assert codes.dtype == np.float32 and codes.shape == (8, hierarchy.num_dims) and np.all(np.isfinite(codes))


@pytest.mark.parametrize("policy", ["mixed_float16"], indirect=True)
def test_float16_steps_scale_the_loss_and_match_float32_steps(policy):
    x = _series(64)
    keras.mixed_precision.set_global_policy("float32")
    reference = hier_models.FactorVAE((64,), latent_dim=4, discriminator_units=(32,), random_state=0)
    keras.mixed_precision.set_global_policy(policy)
    model = hier_models.FactorVAE((64,), latent_dim=4, discriminator_units=(32,), random_state=0)
    model.set_weights(reference.get_weights())
    deltas = []
    for m in (reference, model):
        optimizer = keras.optimizers.SGD(0.01)
        if m is model:  # a fixed small scale: the default 2**15 overflows and skips the first steps
            optimizer = keras.optimizers.LossScaleOptimizer(optimizer, initial_scale=8.0)
        m.compile(optimizer=optimizer, discriminator_optimizer=keras.optimizers.SGD(0.01))
        before = [m.encoder.get_weights()[0], m.discriminator.get_weights()[0]]
        m.fit(x, batch_size=64, epochs=1, verbose=0, shuffle=False)
        after = [m.encoder.get_weights()[0], m.discriminator.get_weights()[0]]
        deltas.append([a - b for a, b in zip(after, before)])
    assert isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer)
    assert isinstance(model.discriminator_optimizer, keras.optimizers.LossScaleOptimizer)
    # without scale_loss in the steps the updates would be 8 (main) and 2**15 (discriminator) times too small
    for d32, d16 in zip(*deltas):
        assert np.linalg.norm(d32) > 0
        assert np.linalg.norm(d16 - d32) < 0.05 * np.linalg.norm(d32)


@pytest.mark.parametrize("build", [
    lambda dtype: hier_models.FactorVAE((64,), latent_dim=4, discriminator_units=(32, 32), discriminator_dtype=dtype,
                                        random_state=0),
    lambda dtype: hier_models.COFHAE((64,), ground_truth("chopsticks/depth2_either").hierarchy, ablation="H+TC(Z|on)",
                                     hidden_units=(32,), discriminator_units=(32, 32), discriminator_dtype=dtype, random_state=0),
], ids=["FactorVAE", "COFHAE"])
def test_discriminator_alone_in_bfloat16(build):
    """discriminator_dtype='mixed_bfloat16': the discriminator's hidden layers compute in
    bfloat16, everything else (and its variables and logit) in float32; training stays
    close to the all-float32 model and the setting survives get_config."""
    x = _series()
    fast, exact = build("mixed_bfloat16"), build(None)
    hidden = [layer for layer in fast.discriminator.layers if isinstance(layer, keras.layers.Dense)]
    assert [layer.compute_dtype for layer in hidden] == ["bfloat16", "bfloat16", "float32"]
    assert all(v.dtype == "float32" for v in fast.discriminator.weights)
    assert fast.encoder.layers[-1].compute_dtype == "float32"
    assert fast.get_config()["discriminator_dtype"] == "mixed_bfloat16"
    assert type(fast).from_config(fast.get_config()).discriminator.layers[1].compute_dtype == "bfloat16"
    exact.set_weights(fast.get_weights())  # the same start, so that only the precision differs
    losses = []
    for model in (fast, exact):
        model.compile(optimizer=keras.optimizers.SGD(1e-3))
        losses.append(model.fit(x, batch_size=64, epochs=2, verbose=0, shuffle=False).history["discriminator_loss"])
    np.testing.assert_allclose(losses[0], losses[1], rtol=0.02)
    with pytest.raises(ValueError, match="discriminator_dtype must be one of"):
        build("bfloat16")
