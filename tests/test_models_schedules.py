"""Beta annealing and ladder fade-in: documented values at given steps, and in training;
schedule lengths as fractions of the training length that fit sets."""
from __future__ import annotations

import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf

import hier_models
from hier_models import losses
from hier_models.schedules import LinearRamp, annealed_weight, check_length, fit_steps, ladder_fade_in, resolve_length

LADDERS = [hier_models.ProVLAE, hier_models.ProLVAE]


def values(ramp, steps):
    return [float(ramp(t)) for t in steps]


def test_linear_ramp_values():
    ramp = LinearRamp(start=100, duration=200, initial=1.0, final=5.0)
    assert values(ramp, [0, 100, 150, 200, 300, 10_000]) == pytest.approx([1, 1, 2, 3, 5, 5])
    jump = LinearRamp(start=10, duration=0, initial=0.0, final=2.0)
    assert values(jump, [0, 9, 10, 11]) == [0, 0, 2, 2]


def test_linear_ramp_round_trips_through_keras_serialization():
    ramp = LinearRamp(start=3, duration=7, initial=0.5, final=2.0)
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(ramp))
    assert isinstance(restored, LinearRamp)
    assert restored.get_config() == {"start": 3, "duration": 7, "initial": 0.5, "final": 2.0}
    steps, expected = [0, 3, 5, 10, 20], [0.5, 0.5, 0.5 + 1.5 * 2 / 7, 2.0, 2.0]
    assert values(ramp, steps) == pytest.approx(expected) and values(restored, steps) == pytest.approx(expected)
    with pytest.raises(ValueError, match="duration"):
        LinearRamp(duration=-1)


def test_annealed_beta_reaches_beta_after_the_anneal_steps():
    ramp = annealed_weight(4.0, 10_000)
    assert values(ramp, [0, 2_500, 5_000, 10_000, 20_000]) == pytest.approx([0, 1, 2, 4, 4])
    assert values(annealed_weight(4.0, 0), [0, 1]) == [4, 4]
    with pytest.raises(ValueError, match="beta"):
        annealed_weight(-1.0, 10)


def test_ladder_fade_in_default_timeline():
    """Defaults: layer 2 fades in over steps 5,000-10,000, layer 1 over 10,000-15,000."""
    ramps = ladder_fade_in(3, 5_000)
    steps = [0, 5_000, 7_500, 10_000, 12_500, 15_000, 30_000]
    assert values(ramps[1], steps) == pytest.approx([0, 0, 0.5, 1, 1, 1, 1])  # alpha_2
    assert values(ramps[0], steps) == pytest.approx([0, 0, 0, 0, 0.5, 1, 1])  # alpha_1
    custom = ladder_fade_in(3, 500, stage_steps=1_000)
    assert values(custom[1], [999, 1_000, 1_250, 1_500]) == pytest.approx([0, 0, 0.5, 1])
    assert values(custom[0], [1_999, 2_000, 2_250, 2_500]) == pytest.approx([0, 0, 0.5, 1])


@pytest.mark.parametrize("cls", LADDERS)
def test_ladder_model_schedule_matches_the_documented_values(cls):
    model = cls((64,), beta=4.0, beta_anneal_steps=5_000, fade_in_steps=5_000, random_state=0)
    assert model.schedule(0) == pytest.approx({"beta": 0.0, "alpha_1": 0.0, "alpha_2": 0.0})
    assert model.schedule(2_500) == pytest.approx({"beta": 2.0, "alpha_1": 0.0, "alpha_2": 0.0})
    assert model.schedule(7_500) == pytest.approx({"beta": 4.0, "alpha_1": 0.0, "alpha_2": 0.5})
    assert model.schedule(12_500) == pytest.approx({"beta": 4.0, "alpha_1": 0.5, "alpha_2": 1.0})
    assert model.schedule(15_000) == pytest.approx({"beta": 4.0, "alpha_1": 1.0, "alpha_2": 1.0})
    assert model.schedule() == model.schedule(0)


def test_vae_beta_schedule_on_the_model():
    model = hier_models.VAE((64,), beta=6.0, beta_anneal_steps=10_000, random_state=0)
    assert model.schedule(5_000) == pytest.approx({"beta": 3.0})
    assert hier_models.BetaTCVAE((64,), beta=6.0, random_state=0).schedule(0) == pytest.approx({"beta": 6.0})


class _Recorder(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.logs = []

    def on_train_batch_end(self, batch, logs=None):
        self.logs.append(dict(logs))


def test_metrics_report_the_schedule_at_each_training_step():
    x = np.random.default_rng(0).normal(0, 0.3, (64, 64)).astype(np.float32)
    model = hier_models.ProVLAE((64,), beta=2.0, beta_anneal_steps=8, fade_in_steps=4, hidden_units=(32,), random_state=0)
    model.compile()
    recorder = _Recorder()
    model.fit(x, batch_size=8, epochs=2, shuffle=False, verbose=0, callbacks=[recorder])
    assert model.step == 16
    for t, logs in enumerate(recorder.logs):
        expected = model.schedule(t)
        for name, value in expected.items():
            assert logs[name] == pytest.approx(value), (t, name)
    assert [logs["alpha_2"] for logs in recorder.logs[3:9]] == pytest.approx([0, 0, 0.25, 0.5, 0.75, 1.0])


def test_faded_out_layers_do_not_reach_the_decoder():
    model = hier_models.ProVLAE((64,), hidden_units=(32,), fade_in_steps=10, random_state=0)
    rng = np.random.default_rng(1)
    z = rng.standard_normal((4, 12)).astype(np.float32)
    z_other = z.copy()
    z_other[:, :8] = rng.standard_normal((4, 8))  # layers 1 and 2 change, layer 3 does not
    np.testing.assert_array_equal(model.decode(z), model.decode(z_other))  # step 0: alpha = 0
    model._step.assign(30)  # both lower layers fully faded in
    assert not np.allclose(model.decode(z), model.decode(z_other))


def test_lower_layer_kl_enters_the_loss_once_faded_in():
    x = np.random.default_rng(0).normal(0, 0.3, (32, 64)).astype(np.float32)
    model = hier_models.ProVLAE((64,), beta=3.0, beta_anneal_steps=0, fade_in_steps=10, gamma=0.0, hidden_units=(32,),
                                random_state=0)
    model.compile()
    before = model.evaluate(x, batch_size=32, verbose=0, return_dict=True)
    assert before["loss"] == pytest.approx(before["reconstruction"] + 3.0 * before["kl_3"], rel=1e-5)
    model._step.assign(15)  # layer 2 fading in (alpha 0.5), layer 1 not yet
    during = model.evaluate(x, batch_size=32, verbose=0, return_dict=True)
    assert during["alpha_2"] == pytest.approx(0.5) and during["alpha_1"] == 0
    expected = during["reconstruction"] + 3.0 * (during["kl_3"] + during["kl_2"])
    assert during["loss"] == pytest.approx(expected, rel=1e-5)


# ------------------------------------------------------- lengths of training
def test_schedule_lengths_are_steps_or_fractions():
    assert check_length("fade_in_steps", 5_000) == 5_000 and isinstance(check_length("x", 5_000), int)
    assert check_length("fade_in_steps", 0.25) == 0.25 and check_length("x", 1.0) == 1.0
    assert resolve_length(5_000, None) == 5_000 and resolve_length(0.25, None) is None
    assert resolve_length(0.25, 790) == 198 and resolve_length(0.2, 16) == 3
    for bad in (-1, 1.5, -0.1, True, "0.2", None):
        with pytest.raises(ValueError, match="fade_in_steps"):
            check_length("fade_in_steps", bad)
    with pytest.raises(ValueError, match="5000 steps as an int"):
        check_length("fade_in_steps", 5000.0)
    for cls, arg in ((hier_models.VAE, "beta_anneal_steps"), (hier_models.ProVLAE, "stage_steps"),
                     (hier_models.ProLVAE, "fade_in_steps")):
        with pytest.raises(ValueError, match=arg):
            cls((64,), random_state=0, **{arg: 2.0})
    with pytest.raises(ValueError, match="training_steps"):
        hier_models.VAE((64,), training_steps=0, random_state=0)
    with pytest.raises(ValueError, match="gamma"):
        hier_models.ProVLAE((64,), gamma=-1.0, random_state=0)
    with pytest.raises(ValueError, match="encoder_fade_in"):
        hier_models.ProVLAE((64,), encoder_fade_in="yes", random_state=0)


def test_fit_steps_counts_what_keras_fit_runs():
    x = np.zeros((100, 3), np.float32)
    assert fit_steps(x, batch_size=8, epochs=2) == 26  # ceil(100 / 8) = 13 per epoch
    assert fit_steps(x, epochs=1) == 4  # Keras' default batch of 32
    assert fit_steps(x, batch_size=10, epochs=3, initial_epoch=1, validation_split=0.2) == 16
    ds = tf.data.Dataset.from_tensor_slices(x).batch(30)
    assert fit_steps(ds, epochs=5) == 20
    assert fit_steps(ds.repeat(), epochs=5) is None
    assert fit_steps(ds.repeat(), epochs=5, steps_per_epoch=7) == 35


@pytest.mark.parametrize("cls", LADDERS)
def test_default_ladder_schedule_follows_a_16_step_fit(cls):
    """Defaults are fractions 0.2: layer 2 fades in over steps 3-6 of 16, layer 1 over 6-9."""
    model = cls((64,), beta=2.0, hidden_units=(32,), random_state=0)
    assert model.training_steps is None and model.schedule(10**6) == {"beta": 0.0, "alpha_1": 0.0, "alpha_2": 0.0}
    model.compile()
    x = np.random.default_rng(0).normal(0, 0.3, (128, 64)).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the schedule completes: no warning
        model.fit(x, batch_size=8, epochs=2, verbose=0)
    assert model.step == 32 and model.training_steps == 32 and model.get_config()["training_steps"] == 32
    # 0.2 * 32 = 6.4 -> 6 steps: top beta 0 -> 2 over 0-6, layer 2 over 6-12, layer 1 over 12-18
    assert model.schedule(3) == pytest.approx({"beta": 1.0, "alpha_1": 0.0, "alpha_2": 0.0})
    assert model.schedule(9) == pytest.approx({"beta": 2.0, "alpha_1": 0.0, "alpha_2": 0.5})
    assert model.schedule(15) == pytest.approx({"beta": 2.0, "alpha_1": 0.5, "alpha_2": 1.0})
    assert model.schedule() == {"beta": 2.0, "alpha_1": 1.0, "alpha_2": 1.0}


@pytest.mark.parametrize("cls", LADDERS)
def test_every_latent_changes_the_reconstruction_after_a_16_step_fit(cls):
    model = cls((64,), hidden_units=(32,), random_state=0)
    model.compile()
    x = np.random.default_rng(0).normal(0, 0.3, (128, 64)).astype(np.float32)
    model.fit(x, batch_size=8, epochs=1, verbose=0)
    assert model.step == 16
    z = model.encode(x[:8])
    assert z.shape == (8, 12)
    base = model.decode(z)
    for j in range(12):
        shifted = z.copy()
        shifted[:, j] += 1.0
        assert np.abs(model.decode(shifted) - base).max() > 1e-4, f"latent {j} does not reach the decoder"


def test_absolute_schedules_warn_when_the_run_is_too_short():
    x = np.random.default_rng(0).normal(0, 0.3, (64, 64)).astype(np.float32)
    model = hier_models.ProVLAE((64,), fade_in_steps=5_000, beta_anneal_steps=5_000, hidden_units=(16,), random_state=0)
    model.compile()
    with pytest.warns(UserWarning, match=r"ends at step 8 but .*fade-in of layer 1 ends at step 15000"):
        model.fit(x, batch_size=8, epochs=1, verbose=0)
    assert model.training_steps is None and model.schedule() == pytest.approx({"beta": 0.0016, "alpha_1": 0.0, "alpha_2": 0.0})
    vae = hier_models.VAE((64,), beta_anneal_steps=10_000, hidden_units=(16,), random_state=0)
    vae.compile()
    with pytest.warns(UserWarning, match="beta annealing ends at step 10000"):
        vae.fit(x, batch_size=8, epochs=1, verbose=0)


def test_a_fixed_training_length_is_kept_across_fits():
    x = np.random.default_rng(0).normal(0, 0.3, (64, 64)).astype(np.float32)
    model = hier_models.VAE((64,), beta=4.0, beta_anneal_steps=0.5, training_steps=32, hidden_units=(16,), random_state=0)
    model.compile()
    model.fit(x, batch_size=8, epochs=1, verbose=0)  # steps 0-7 of a planned 32: anneal over 16
    assert model.training_steps == 32 and model.schedule() == pytest.approx({"beta": 2.0})
    model.fit(x, batch_size=8, epochs=1, verbose=0)
    assert model.step == 16 and model.schedule() == pytest.approx({"beta": 4.0})
    # without a fixed length, each fit plans the steps so far plus its own
    free = hier_models.VAE((64,), beta=4.0, beta_anneal_steps=0.5, hidden_units=(16,), random_state=0)
    free.compile()
    free.fit(x, batch_size=8, epochs=1, verbose=0)
    assert free.training_steps == 8
    free.fit(x, batch_size=8, epochs=3, verbose=0)
    assert free.training_steps == 32 and free.schedule(8) == pytest.approx({"beta": 2.0})


def test_fractions_need_a_known_length():
    x = np.random.default_rng(0).normal(0, 0.3, (64, 64)).astype(np.float32)
    model = hier_models.VAE((64,), beta_anneal_steps=0.5, hidden_units=(16,), random_state=0)
    model.compile()
    endless = tf.data.Dataset.from_tensor_slices(x).batch(8).repeat()
    with pytest.raises(ValueError, match="steps_per_epoch"):
        model.fit(endless, epochs=1, verbose=0)
    with pytest.raises(ValueError, match="training_steps"):
        model.train_on_batch(x[:8])
    model.fit(endless, epochs=2, steps_per_epoch=5, verbose=0)
    assert model.training_steps == 10 and model.step == 10


# ------------------------------------------- gamma and the encoder's fade-in
def _batch():
    return np.random.default_rng(3).normal(0, 0.3, (16, 64)).astype(np.float32)


@pytest.mark.parametrize("cls", LADDERS)
def test_gamma_weighs_the_kl_of_layers_not_yet_faded_in(cls):
    x = _batch()
    # without the encoder fade-in the lower layers' KL is not 0 before they fade in
    model = cls((64,), beta=3.0, beta_anneal_steps=0, fade_in_steps=10, gamma=0.5, encoder_fade_in=False,
                hidden_units=(32,), random_state=0)
    model.compile()
    at_0 = model.evaluate(x, batch_size=16, verbose=0, return_dict=True)
    assert at_0["kl_1"] > 1e-3 and at_0["kl_2"] > 1e-3
    # loss = reconstruction + 3 KL_3 + 0.5 (KL_1 + KL_2): neither lower layer has started
    expected = at_0["reconstruction"] + 3.0 * at_0["kl_3"] + 0.5 * (at_0["kl_1"] + at_0["kl_2"])
    assert at_0["loss"] == pytest.approx(expected, rel=1e-5)
    assert at_0["loss"] - (at_0["reconstruction"] + 3.0 * at_0["kl_3"]) > 1e-3
    model._step.assign(15)  # layer 2 at alpha 0.5: weight beta; layer 1 not started: gamma
    during = model.evaluate(x, batch_size=16, verbose=0, return_dict=True)
    expected = during["reconstruction"] + 3.0 * (during["kl_3"] + during["kl_2"]) + 0.5 * during["kl_1"]
    assert during["loss"] == pytest.approx(expected, rel=1e-5)


def _hand_kl(mean, logvar):
    """KL(N(mean, exp(logvar)) || N(0, I)), summed over latents, averaged over the batch."""
    mean, logvar = np.asarray(mean, np.float64), np.asarray(logvar, np.float64)
    return float(np.mean(0.5 * np.sum(np.exp(logvar) + mean**2 - 1.0 - logvar, axis=1)))


@pytest.mark.parametrize("encoder_fade_in", [True, False])
def test_encoder_fade_in_scales_the_ladder_encoders_input(encoder_fade_in):
    """Layer 2's KL at alpha_2 = 0.5, computed by hand from the networks: its ladder
    encoder reads 0.5 h_2 (with the encoder fade-in) or h_2 (without)."""
    x = _batch()
    model = hier_models.ProVLAE((64,), beta_anneal_steps=0, fade_in_steps=10, encoder_fade_in=encoder_fade_in,
                                hidden_units=(32,), random_state=0)
    model.compile()
    model._step.assign(15)
    assert model.schedule()["alpha_2"] == 0.5
    reported = model.evaluate(x, batch_size=16, verbose=0, return_dict=True)["kl_2"]
    h2 = model.bottom_up[1](model.bottom_up[0](x))
    scale = 0.5 if encoder_fade_in else 1.0
    out = model.posterior_heads[1](model.ladder_encoders[1](scale * h2)).numpy()
    hand = _hand_kl(out[:, :4], losses.bound_logvar(out[:, 4:]).numpy())
    assert reported == pytest.approx(hand, rel=1e-5)
    other = model.posterior_heads[1](model.ladder_encoders[1]((1.5 - scale) * h2)).numpy()
    assert abs(_hand_kl(other[:, :4], losses.bound_logvar(other[:, 4:]).numpy()) - reported) > 1e-3


def test_a_layer_not_faded_in_encodes_nothing_of_the_input():
    """pro-VLAE; a pro-LVAE layer also reads the layers above through its prior."""
    cls = hier_models.ProVLAE
    x = _batch()
    faded = cls((64,), fade_in_steps=10, hidden_units=(32,), random_state=0)
    codes = faded.encode(x)  # step 0: alpha_1 = alpha_2 = 0
    np.testing.assert_allclose(codes[:, :4], np.broadcast_to(codes[:1, :4], (16, 4)), atol=1e-6)
    assert codes[:, 8:].std(axis=0).min() > 0  # the top layer reads the input
    open_encoder = cls((64,), fade_in_steps=10, encoder_fade_in=False, hidden_units=(32,), random_state=0)
    assert open_encoder.encode(x)[:, :4].std(axis=0).min() > 0


# ------------------------------------------- beta annealed from a start value
def _beta_t(beta, start, anneal, t):
    """beta_t = beta_0 + (beta - beta_0) * min(1, t / anneal) (Burgess et al. 2018;
    the Boxhead paper, section 5)."""
    return start + (beta - start) * min(1.0, t / anneal)


def test_annealed_weight_from_a_start_value():
    ramp = annealed_weight(5.0, 10_000, start=200.0)
    steps = [0, 1, 2_500, 5_000, 9_999, 10_000, 50_000]
    assert values(ramp, steps) == pytest.approx([_beta_t(5.0, 200.0, 10_000, t) for t in steps])
    assert values(ramp, [0, 5_000, 10_000]) == pytest.approx([200.0, 102.5, 5.0])
    assert values(annealed_weight(5.0, None, start=200.0), [0, 10**6]) == [200.0, 200.0]  # length unknown
    with pytest.raises(ValueError, match="beta_start"):
        annealed_weight(5.0, 10, start=-1.0)


@pytest.mark.parametrize("cls", [hier_models.VAE, hier_models.BetaTCVAE, hier_models.FactorVAE])
def test_single_layer_beta_annealed_down_from_beta_start(cls):
    model = cls((64,), beta=5.0, beta_anneal_steps=10_000, beta_start=200.0, hidden_units=(16,), random_state=0)
    for t in (0, 1, 2_500, 7_500, 10_000, 25_000):
        assert model.schedule(t) == pytest.approx({"beta": _beta_t(5.0, 200.0, 10_000, t)})
    assert model.schedule(5_000) == pytest.approx({"beta": 102.5})
    # the default (None) is today's warm-up from 0, in every model
    warm = cls((64,), beta=5.0, beta_anneal_steps=10_000, hidden_units=(16,), random_state=0)
    assert [warm.schedule(t)["beta"] for t in (0, 5_000, 10_000)] == pytest.approx([0.0, 2.5, 5.0])


@pytest.mark.parametrize("cls", LADDERS)
def test_ladder_top_beta_annealed_down_from_beta_start(cls):
    model = cls((64,), beta=10.0, beta_anneal_steps=5_000, beta_start=150.0, fade_in_steps=5_000, random_state=0)
    for t in (0, 1_000, 2_500, 4_999, 5_000, 12_500):
        assert model.schedule(t)["beta"] == pytest.approx(_beta_t(10.0, 150.0, 5_000, t))
    assert model.schedule(2_500) == pytest.approx({"beta": 80.0, "alpha_1": 0.0, "alpha_2": 0.0})
    assert model.schedule(12_500) == pytest.approx({"beta": 10.0, "alpha_1": 0.5, "alpha_2": 1.0})


def test_beta_start_follows_a_fraction_schedule_set_by_fit():
    x = _batch()
    model = hier_models.VAE((64,), beta=2.0, beta_anneal_steps=0.5, beta_start=50.0, hidden_units=(16,), random_state=0)
    assert model.schedule(10**6) == {"beta": 50.0}  # training length unknown: the step-0 value
    model.compile(optimizer="adam")
    model.fit(x, batch_size=4, epochs=2, verbose=0)  # 8 steps: annealing over the first 4
    assert model.training_steps == 8
    assert [model.schedule(t)["beta"] for t in (0, 2, 4, 8)] == pytest.approx([50.0, 26.0, 2.0, 2.0])


def test_vae_loss_uses_the_annealed_beta():
    x = _batch()
    model = hier_models.VAE((64,), beta=2.0, beta_anneal_steps=8, beta_start=10.0, hidden_units=(16,), random_state=0)
    model.compile()
    model._step.assign(2)  # beta_t = 10 + (2 - 10) * 2 / 8 = 8
    terms = model.evaluate(x, batch_size=16, verbose=0, return_dict=True)
    assert terms["beta"] == pytest.approx(8.0)
    assert terms["loss"] == pytest.approx(terms["reconstruction"] + 8.0 * terms["kl"], rel=1e-5)


def test_beta_tcvae_anneals_the_tc_weight_from_beta_start():
    """With beta_start the penalty keeps its full weight and beta_t weighs the TC term:
    KL + (alpha-1) MI + (beta_t-1) TC + (gamma-1) DWKL; without it the whole penalty
    is warmed up, r_t (KL + (alpha-1) MI + (beta-1) TC + (gamma-1) DWKL)."""
    x = _batch()
    kwargs = dict(beta=4.0, alpha=1.5, gamma=2.0, beta_anneal_steps=8, hidden_units=(16,), random_state=0)
    annealed = hier_models.BetaTCVAE((64,), beta_start=20.0, **kwargs)
    annealed.compile()
    annealed._step.assign(4)  # beta_t = 20 + (4 - 20) / 2 = 12
    t = annealed.evaluate(x, batch_size=16, verbose=0, return_dict=True)
    assert t["beta"] == pytest.approx(12.0)
    expected = t["reconstruction"] + t["kl"] + 0.5 * t["mi"] + 11.0 * t["tc"] + 1.0 * t["dwkl"]
    assert t["loss"] == pytest.approx(expected, rel=1e-4, abs=1e-4)
    warm = hier_models.BetaTCVAE((64,), **kwargs)
    warm.compile()
    warm._step.assign(4)  # r_t = 0.5
    w = warm.evaluate(x, batch_size=16, verbose=0, return_dict=True)
    assert w["beta"] == pytest.approx(2.0)
    expected = w["reconstruction"] + 0.5 * (w["kl"] + 0.5 * w["mi"] + 3.0 * w["tc"] + 1.0 * w["dwkl"])
    assert w["loss"] == pytest.approx(expected, rel=1e-4, abs=1e-4)


@pytest.mark.parametrize("cls", [hier_models.ProVLAE, hier_models.ProLVAE])
def test_ladder_loss_uses_the_annealed_top_beta(cls):
    x = _batch()
    model = cls((64,), beta=3.0, beta_anneal_steps=10, beta_start=23.0, fade_in_steps=10, gamma=0.5,
                encoder_fade_in=False, hidden_units=(32,), random_state=0)
    model.compile()
    model._step.assign(5)  # top: 23 + (3 - 23) / 2 = 13; layers 1 and 2 not started: gamma
    t = model.evaluate(x, batch_size=16, verbose=0, return_dict=True)
    assert t["beta"] == pytest.approx(13.0)
    expected = t["reconstruction"] + 13.0 * t["kl_3"] + 0.5 * (t["kl_1"] + t["kl_2"])
    assert t["loss"] == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize("cls", [hier_models.VAE, hier_models.BetaTCVAE, hier_models.ProVLAE])
def test_bad_beta_start_is_named(cls):
    for bad in (-1.0, float("nan"), "200", True):
        with pytest.raises(ValueError, match="beta_start"):
            cls((64,), beta_anneal_steps=10, beta_start=bad, hidden_units=(16,), random_state=0)
    for constant in (0, 0.0):  # a start value with a constant beta would be ignored
        with pytest.raises(ValueError, match="beta_start=200 needs beta_anneal_steps > 0"):
            cls((64,), beta_anneal_steps=constant, beta_start=200.0, hidden_units=(16,), random_state=0)


@pytest.mark.parametrize("cls", [hier_models.VAE, hier_models.ProLVAE])
def test_configs_without_beta_start_load_as_before(cls):
    """A model saved before beta_start existed has no such key: it loads as a warm-up."""
    model = cls((64,), beta=4.0, beta_anneal_steps=100, hidden_units=(16,), random_state=0)
    config = model.get_config()
    assert config["beta_start"] is None
    del config["beta_start"]
    restored = cls.from_config(config)
    assert restored.beta_start is None
    assert [restored.schedule(t)["beta"] for t in (0, 50, 100)] == pytest.approx([0.0, 2.0, 4.0])
