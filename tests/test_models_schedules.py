"""Beta annealing and ladder fade-in: documented values at given steps, and in training."""
from __future__ import annotations

import keras
import numpy as np
import pytest

import hier_models
from hier_models.schedules import LinearRamp, annealed_weight, ladder_fade_in


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


@pytest.mark.parametrize("cls", [hier_models.ProVLAE, hier_models.ProLVAE])
def test_ladder_model_schedule_matches_the_documented_values(cls):
    model = cls((64,), beta=4.0, seed=0)
    assert model.schedule(0) == pytest.approx({"beta": 0.0, "alpha_1": 0.0, "alpha_2": 0.0})
    assert model.schedule(2_500) == pytest.approx({"beta": 2.0, "alpha_1": 0.0, "alpha_2": 0.0})
    assert model.schedule(7_500) == pytest.approx({"beta": 4.0, "alpha_1": 0.0, "alpha_2": 0.5})
    assert model.schedule(12_500) == pytest.approx({"beta": 4.0, "alpha_1": 0.5, "alpha_2": 1.0})
    assert model.schedule(15_000) == pytest.approx({"beta": 4.0, "alpha_1": 1.0, "alpha_2": 1.0})
    assert model.schedule() == model.schedule(0)


def test_vae_beta_schedule_on_the_model():
    model = hier_models.VAE((64,), beta=6.0, beta_anneal_steps=10_000, seed=0)
    assert model.schedule(5_000) == pytest.approx({"beta": 3.0})
    assert hier_models.BetaTCVAE((64,), beta=6.0, seed=0).schedule(0) == pytest.approx({"beta": 6.0})


class _Recorder(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.logs = []

    def on_train_batch_end(self, batch, logs=None):
        self.logs.append(dict(logs))


def test_metrics_report_the_schedule_at_each_training_step():
    x = np.random.default_rng(0).normal(0, 0.3, (64, 64)).astype(np.float32)
    model = hier_models.ProVLAE((64,), beta=2.0, beta_anneal_steps=8, fade_in_steps=4, hidden_units=(32,), seed=0)
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
    model = hier_models.ProVLAE((64,), hidden_units=(32,), fade_in_steps=10, seed=0)
    rng = np.random.default_rng(1)
    z = rng.standard_normal((4, 12)).astype(np.float32)
    z_other = z.copy()
    z_other[:, :8] = rng.standard_normal((4, 8))  # layers 1 and 2 change, layer 3 does not
    np.testing.assert_array_equal(model.decode(z), model.decode(z_other))  # step 0: alpha = 0
    model._step.assign(30)  # both lower layers fully faded in
    assert not np.allclose(model.decode(z), model.decode(z_other))


def test_lower_layer_kl_enters_the_loss_once_faded_in():
    x = np.random.default_rng(0).normal(0, 0.3, (32, 64)).astype(np.float32)
    model = hier_models.ProVLAE((64,), beta=3.0, beta_anneal_steps=0, fade_in_steps=10, hidden_units=(32,), seed=0)
    model.compile()
    before = model.evaluate(x, batch_size=32, verbose=0, return_dict=True)
    assert before["loss"] == pytest.approx(before["reconstruction"] + 3.0 * before["kl_3"], rel=1e-5)
    model._step.assign(15)  # layer 2 fading in (alpha 0.5), layer 1 not yet
    during = model.evaluate(x, batch_size=32, verbose=0, return_dict=True)
    assert during["alpha_2"] == pytest.approx(0.5) and during["alpha_1"] == 0
    expected = during["reconstruction"] + 3.0 * (during["kl_3"] + during["kl_2"])
    assert during["loss"] == pytest.approx(expected, rel=1e-5)
