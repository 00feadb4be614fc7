"""COFHAE: hierarchical encoding, assignment loss, conditional permutation, targets,
the discriminator's optimiser, training, saving."""
import keras
import numpy as np
import pytest
import tensorflow as tf

import hier_datasets
from hier_datasets.hierarchy import Categorical, Group, Hierarchy
from hier_models import FactorVAE
from hier_models.cofhae import (
    COFHAE,
    HierarchicalEncoding,
    conditional_permute,
    targets_from_assignments,
    targets_from_factors,
)
from hier_models.hierarchical import PAPER_GRID, grid_points, grid_search

SHIP = Group(("angle",), Categorical("jet", (("none", Group()), ("jet", Group(("jetlen",))))))
SHAPES = (("moon", Group(("phase",))), ("star", Group(("shine",))), ("ship", SHIP))
SPACESHAPES = Hierarchy(Group(("x", "y"), Categorical("shape", SHAPES)))


def encoder_outputs(z, shape_probs, jet_probs):
    """Encoder outputs whose softmax (tau = 1) gives the stated probabilities."""
    return tf.constant([list(z) + list(np.log(shape_probs)) + list(np.log(jet_probs))], tf.float32)


def test_masks_for_hand_set_logits():
    enc = HierarchicalEncoding(SPACESHAPES)
    assert (enc.num_continuous, enc.num_options, enc.encoder_width) == (6, 5, 11)
    z, logits = enc.split(encoder_outputs([1, 2, 3, 4, 5, 6], [0.5, 0.3, 0.2], [0.25, 0.75]))
    probs = enc.soft_probs(logits, tau=1.0)
    inputs, masks = enc.decoder_input(z, probs)
    # x y shape phase shine angle jet jetlen
    np.testing.assert_allclose(masks.numpy()[0], [1, 1, 1, 0.5, 0.3, 0.2, 0.2, 0.15], rtol=1e-5)
    expected = [0.5, 0.3, 0.2, 0.25 * 0.2, 0.75 * 0.2] + [1, 2, 3 * 0.5, 4 * 0.3, 5 * 0.2, 6 * 0.15]
    np.testing.assert_allclose(inputs.numpy()[0], expected, rtol=1e-5)


def test_temperature_sharpens_the_softmax():
    enc = HierarchicalEncoding(SPACESHAPES)
    _, logits = enc.split(encoder_outputs(np.zeros(6), [0.5, 0.3, 0.2], [0.25, 0.75]))
    p = enc.soft_probs(logits, tau=0.5).numpy()[0, :3]
    np.testing.assert_allclose(p, np.array([0.25, 0.09, 0.04]) / 0.38, rtol=1e-5)


def test_hard_codes_zero_inactive_dimensions_exactly():
    enc = HierarchicalEncoding(SPACESHAPES)
    out = encoder_outputs([1, 2, 3, 4, 5, 6], [0.2, 0.3, 0.5], [0.6, 0.4])
    z, logits = enc.split(out)
    hard = enc.hard_probs(logits)
    codes = enc.flat_codes(z, hard, enc.masks(hard)).numpy()[0]
    # ship without jet: x, y, shape=3 (option index 2 + 1), angle, jet=1 (none); phase, shine, jetlen exactly 0
    np.testing.assert_array_equal(codes, [1, 2, 3, 0, 0, 5, 1, 0])
    assert SPACESHAPES.path_index(codes) == 2
    # decoding the flat codes gives the hard decoder input back
    np.testing.assert_allclose(enc.from_flat(tf.constant([codes], tf.float32)).numpy(), enc.decoder_input(z, hard)[0].numpy())


def test_conditional_permutation_keeps_active_sets_and_values():
    rng = np.random.default_rng(0)
    z = rng.normal(size=(300, 4)).astype(np.float32)
    active = rng.random((300, 4)) < np.array([1.0, 0.5, 0.2, 0.0])
    z[~active] = 0.0
    out = conditional_permute(tf.constant(z), tf.constant(active), tf.constant([3, 4])).numpy()
    np.testing.assert_array_equal(out[~active], 0.0)
    for d in range(4):
        np.testing.assert_array_equal(np.sort(out[active[:, d], d]), np.sort(z[active[:, d], d]))
        assert (np.abs(out[:, d]) > 0).sum() == active[:, d].sum()
    assert np.mean(out[active[:, 0], 0] != z[active[:, 0], 0]) > 0.9, "values really move"
    again = conditional_permute(tf.constant(z), tf.constant(active), tf.constant([3, 4])).numpy()
    np.testing.assert_array_equal(out, again)


def test_targets():
    a = np.array([0, 3, -1])
    t = targets_from_assignments(SPACESHAPES, a)
    np.testing.assert_array_equal(t[:, [2, 6]], [[0, -1], [2, 1], [-1, -1]])
    assert np.isnan(t[:, ~SPACESHAPES.is_categorical]).all()
    with pytest.raises(ValueError, match="assignments must be path indices in \\[-1, 4\\)"):
        targets_from_assignments(SPACESHAPES, [4])
    gt = hier_datasets.ground_truth("spaceshapes")
    f = gt.sample_factors(50, 0)
    t = targets_from_factors(gt.hierarchy, f, standardize=False)
    active = gt.active(f)
    np.testing.assert_array_equal(np.isnan(t), ~active & ~gt.hierarchy.is_categorical)
    cont = active & ~gt.hierarchy.is_categorical
    np.testing.assert_array_equal(t[cont], f[cont])
    cats = active & gt.hierarchy.is_categorical  # factors hold option index + 1, targets the index
    np.testing.assert_array_equal(t[cats], f[cats] - 1)
    np.testing.assert_array_equal(t[~active & gt.hierarchy.is_categorical], -1)
    # standardised: each continuous target has mean 0 and std 1 where it is active, the rest as before
    z = targets_from_factors(gt.hierarchy, f)
    np.testing.assert_array_equal(np.isnan(z), np.isnan(t))
    np.testing.assert_array_equal(z[:, gt.hierarchy.is_categorical], t[:, gt.hierarchy.is_categorical])
    for d in np.flatnonzero(~gt.hierarchy.is_categorical):
        values = f[active[:, d], d].astype(float)
        np.testing.assert_allclose(z[active[:, d], d], (values - values.mean()) / values.std(), atol=1e-12)
    constant = f.copy()
    constant[:, 0] = 0.5
    with pytest.raises(ValueError, match=r"continuous factors \['x'\] are constant where active"):
        targets_from_factors(gt.hierarchy, constant)


def _constant_encoder(model, outputs):
    """Make ``model``'s encoder output ``outputs`` whatever its input (zero kernel, bias = outputs)."""
    last = model.encoder.layers[-1]
    kernel, bias = last.get_weights()
    last.set_weights([np.zeros_like(kernel), np.asarray(outputs, bias.dtype)])


def test_assignment_loss_uses_the_masked_nested_probabilities():
    """L_a on a' of Algorithm 8, by hand: shape ~ (0.5, 0.3, 0.2), jet ~ (0.25, 0.75)
    under the ship option, so a'(jet) = 0.2 * (0.25, 0.75) = (0.05, 0.15).

    - ship with a jet (shape = 2, jet = 1): (0.5^2 + 0.3^2 + 0.8^2) + (0.05^2 + 0.85^2)
      = 0.98 + 0.725 = 1.705 (the raw jet softmax would give 0.98 + 0.125 = 1.105);
    - moon (shape = 0, jet undefined): 0.5^2 + 0.3^2 + 0.2^2 = 0.38;
    - the batch mean: (1.705 + 0.38) / 2 = 1.0425.
    """
    model = COFHAE((4,), SPACESHAPES, ablation="H+A", hidden_units=(8,), random_state=0)
    model.compile()
    _constant_encoder(model, encoder_outputs(np.zeros(6), [0.5, 0.3, 0.2], [0.25, 0.75]).numpy()[0])
    x = np.zeros((2, 4), np.float32)
    targets = targets_from_assignments(SPACESHAPES, [3, 0]).astype(np.float32)
    np.testing.assert_array_equal(targets[:, [2, 6]], [[2, 1], [0, -1]])  # shape, jet
    result = model.evaluate(x, targets, batch_size=2, verbose=0, return_dict=True)
    assert result["assignment"] == pytest.approx(1.0425, abs=1e-5)
    one = model.evaluate(x[:1], targets[:1], batch_size=1, verbose=0, return_dict=True)
    assert one["assignment"] == pytest.approx(1.705, abs=1e-5)
    # assignment_probabilities="softmax": the raw jet softmax, (1.105 + 0.38) / 2 = 0.7425
    raw = COFHAE((4,), SPACESHAPES, ablation="H+A", hidden_units=(8,), random_state=0,
                 assignment_probabilities="softmax")
    raw.compile()
    _constant_encoder(raw, encoder_outputs(np.zeros(6), [0.5, 0.3, 0.2], [0.25, 0.75]).numpy()[0])
    result = raw.evaluate(x, targets, batch_size=2, verbose=0, return_dict=True)
    assert result["assignment"] == pytest.approx(0.7425, abs=1e-5)
    with pytest.raises(ValueError, match="assignment_probabilities"):
        COFHAE((4,), SPACESHAPES, assignment_probabilities="hard")


@pytest.mark.parametrize("mode", ["soft", "straight_through"])
def test_decoder_assignments_soft_or_straight_through(mode):
    """Soft: the decoder sees the softmax (every group's codes leak through). Straight-through:
    it sees exactly what ``encode`` gives at evaluation, the assignment loss is unchanged
    (1.0425, computed by hand above), and the option logits still get the reconstruction's
    gradient."""
    model = COFHAE((4,), SPACESHAPES, decoder_assignments=mode, hidden_units=(8,), random_state=0)
    model.compile()
    outputs = encoder_outputs([0.3, -0.7, 1.1, 0.9, -0.4, 0.6], [0.5, 0.3, 0.2], [0.25, 0.75]).numpy()[0]
    _constant_encoder(model, outputs)
    x = np.random.default_rng(0).normal(size=(2, 4)).astype(np.float32)
    targets = targets_from_assignments(SPACESHAPES, [3, 0]).astype(np.float32)
    result = model.evaluate(x, targets, batch_size=2, verbose=0, return_dict=True)
    assert result["assignment"] == pytest.approx(1.0425, abs=1e-5)
    hard = model._reconstruction(x, model._decode_tensor(model._codes(x)))
    hard = float(np.mean(np.asarray(hard)))
    if mode == "soft":
        assert abs(result["reconstruction"] - hard) > 1e-3
    else:
        assert result["reconstruction"] == pytest.approx(hard, rel=1e-5)

    last = model.encoder.layers[-1]
    last.set_weights([np.ones_like(last.get_weights()[0]), last.get_weights()[1]])
    with tf.GradientTape() as tape:
        terms, _ = model._forward(tf.constant(x), training=True)
    kernel_grad = tape.gradient(terms["reconstruction"], last.kernel)
    logit_columns = np.asarray(kernel_grad)[:, model.encoding.num_continuous:]
    assert np.abs(logit_columns).max() > 1e-6
    assert COFHAE.from_config(model.get_config()).decoder_assignments == mode


def test_discriminator_follows_the_main_learning_rate_schedule():
    schedule = keras.optimizers.schedules.PiecewiseConstantDecay([1, 2], [1e-3, 1e-4, 1e-5])  # steps > 1, > 2
    model = COFHAE((64,), SPACESHAPES, hidden_units=(8,), discriminator_units=(8,), random_state=0)
    model.compile(optimizer=keras.optimizers.Adam(schedule))
    disc = model.discriminator_optimizer
    assert isinstance(disc, keras.optimizers.Adam) and disc is not model.optimizer
    assert (disc.beta_1, disc.beta_2) == (0.9, 0.999)  # Keras's defaults, as the authors' TF Adam
    rates = []
    for step in range(4):
        disc.iterations.assign(step)
        rates.append(float(disc.learning_rate))
    np.testing.assert_allclose(rates, [1e-3, 1e-3, 1e-4, 1e-5], rtol=1e-6)
    constant = COFHAE((64,), SPACESHAPES, hidden_units=(8,), discriminator_units=(8,), random_state=0)
    constant.compile(optimizer=keras.optimizers.Adam(2e-3))
    assert float(constant.discriminator_optimizer.learning_rate) == pytest.approx(2e-3)
    # an explicit discriminator optimiser still wins; FactorVAE keeps its own default
    chosen = COFHAE((64,), SPACESHAPES, hidden_units=(8,), discriminator_units=(8,), random_state=0)
    chosen.compile(discriminator_optimizer=keras.optimizers.SGD(0.1))
    assert isinstance(chosen.discriminator_optimizer, keras.optimizers.SGD)
    factor = FactorVAE((64,), latent_dim=2, hidden_units=(8,), discriminator_units=(8,), random_state=0)
    factor.compile(optimizer=keras.optimizers.Adam(schedule))
    f = factor.discriminator_optimizer
    assert (float(f.learning_rate), f.beta_1, f.beta_2) == (pytest.approx(1e-4), 0.5, 0.9)


def test_tc_rows_limits_the_tc_term_and_the_discriminator_step_to_the_first_rows():
    keras.utils.set_random_seed(0)
    model = COFHAE((4,), SPACESHAPES, hidden_units=(8,), discriminator_units=(8,), tc_rows=5, random_state=0)
    model.compile()
    x = np.random.default_rng(0).normal(size=(12, 4))
    x[5:] = 20 * x[5:] + 10  # rows the TC term must not see
    x = tf.constant(x, tf.float32)
    enc = model.encoding
    z, logits = enc.split(model.encoder(x))
    masked = enc.decoder_input(z, enc.soft_probs(logits, model.tau))[0][:, enc.num_options:]
    terms, (codes, active) = model._forward(x, training=False)
    assert codes.shape[0] == active.shape[0] == 5
    np.testing.assert_allclose(codes.numpy(), masked.numpy()[:5], rtol=1e-6)
    expected = float(np.mean(model.discriminator(masked[:5]).numpy()))
    assert float(terms["tc"]) == pytest.approx(expected, rel=1e-5)
    assert abs(float(terms["tc"]) - float(np.mean(model.discriminator(masked).numpy()))) > 1e-3
    targets = targets_from_assignments(SPACESHAPES, np.arange(12) % SPACESHAPES.num_paths).astype(np.float32)
    history = model.fit(x.numpy(), targets, batch_size=12, epochs=2, verbose=0).history
    assert np.isfinite(history["discriminator_loss"]).all()
    assert COFHAE.from_config(model.get_config()).tc_rows == 5
    assert COFHAE((4,), SPACESHAPES).tc_rows is None
    with pytest.raises(ValueError, match="tc_rows"):
        COFHAE((4,), SPACESHAPES, tc_rows=0)


@pytest.fixture(scope="module")
def chopsticks():
    gt = hier_datasets.ground_truth("chopsticks/depth2_either")
    factors, series = gt.sample(768, 1)
    return gt, factors, series


def _train(model, series, targets, epochs):
    model.compile(optimizer=keras.optimizers.Adam(2e-3))
    ds = tf.data.Dataset.from_tensor_slices((series, targets.astype(np.float32))).batch(64)
    return model.fit(ds, epochs=epochs, verbose=0).history


def test_cofhae_trains_and_encodes_in_the_flat_layout(chopsticks, tmp_path):
    gt, factors, series = chopsticks
    h = gt.hierarchy
    targets = targets_from_factors(h, factors)
    model = COFHAE((64,), h, lambda_assign=100.0, lambda_tc=1.0, hidden_units=(64, 64), discriminator_units=(64, 64),
                   random_state=3)
    history = _train(model, series, targets, epochs=25)
    assert history["loss"][-1] < history["loss"][0]
    assert history["assignment"][-1] < 0.5 * history["assignment"][0]
    codes = model.encode(series)
    assert codes.shape == (768, h.num_dims) and np.isfinite(codes).all()
    paths = model.assignments(series)
    assert np.mean(paths == gt.paths(factors)) > 0.7, "supervised assignments are learned"
    inactive = ~h.activity_mask(codes)
    np.testing.assert_array_equal(codes[inactive], 0.0)
    recon = model.decode(codes[:5])
    assert recon.shape == (5, 64)
    path = tmp_path / "cofhae.keras"
    model.save(path)
    loaded = keras.models.load_model(path)
    np.testing.assert_array_equal(loaded.encode(series[:64]), codes[:64])
    assert loaded.hierarchy == h and loaded.ablation == "H+A+TC(Z|on)" and loaded.step == model.step


@pytest.mark.parametrize("ablation", ["H", "H+A+TC(Z)", "H+A+Z"])
def test_ablations_train(chopsticks, ablation):
    gt, factors, series = chopsticks
    model = COFHAE((64,), gt.hierarchy, ablation=ablation, hidden_units=(32,), discriminator_units=(32,), random_state=0)
    targets = targets_from_factors(gt.hierarchy, factors)
    history = _train(model, series[:256], targets[:256], epochs=2)
    assert np.isfinite(history["loss"]).all()
    if ablation == "H+A+Z":
        assert history["supervision"][-1] > 0
    if ablation == "H":
        assert history["tc"][-1] == 0 and history["assignment"][-1] == 0


def test_fully_supervised_codes_hold_every_factor_whatever_its_units(chopsticks):
    # depth-2 either: slopes span 0.01, intercepts 0.2; standardised targets supervise both
    gt, factors, series = chopsticks
    h = gt.hierarchy
    model = COFHAE((64,), h, ablation="H+A+Z", hidden_units=(64, 64), random_state=0)
    _train(model, series, targets_from_factors(h, factors), epochs=40)
    codes, active = model.encode(series), h.activity_mask(factors)
    r2 = [np.corrcoef(codes[active[:, d], d], factors[active[:, d], d])[0, 1] ** 2
          for d in np.flatnonzero(~h.is_categorical)]
    assert min(r2) > 0.6 and np.mean(r2) > 0.85, r2


def test_bad_input(chopsticks):
    gt, factors, series = chopsticks
    with pytest.raises(ValueError, match="ablation must be one of"):
        COFHAE((64,), gt.hierarchy, ablation="H+Q")
    with pytest.raises(ValueError, match="tau"):
        COFHAE((64,), gt.hierarchy, tau=0)
    with pytest.raises(ValueError, match="decoder_assignments must be one of"):
        COFHAE((64,), gt.hierarchy, decoder_assignments="hard")
    with pytest.raises(TypeError, match="hierarchy must be a hier_datasets.Hierarchy"):
        COFHAE((64,), [{"type": "continuous"}])
    model = COFHAE((64,), gt.hierarchy, hidden_units=(16,), discriminator_units=(16,), random_state=0)
    model.compile()
    wrong = tf.data.Dataset.from_tensor_slices((series[:32], np.zeros((32, 3), np.float32))).batch(16)
    with pytest.raises(ValueError, match=r"targets must have shape \(n, 9\)"):
        model.fit(wrong, epochs=1, verbose=0)
    with pytest.raises(ValueError, match="needs \\(observation, targets\\) batches"):
        model.fit(tf.data.Dataset.from_tensor_slices(series[:32]).batch(16), epochs=1, verbose=0)


def test_paper_grid_points_and_their_checks():
    points = grid_points(PAPER_GRID)
    assert len(points) == 27 and len({tuple(p.items()) for p in points}) == 27
    assert {p["tau"] for p in points} == {0.5, 0.67, 1.0}
    assert {p["lambda_assign"] for p in points} == {10.0, 100.0, 1000.0}
    assert {p["lambda_tc"] for p in points} == {1.0, 10.0, 100.0}
    assert points[0] == {"tau": 0.5, "lambda_assign": 10.0, "lambda_tc": 1.0}
    assert points[1] == {"tau": 0.5, "lambda_assign": 10.0, "lambda_tc": 10.0}  # the last name varies fastest
    with pytest.raises(ValueError, match=r"grid\['tau'\] must be a non-empty sequence"):
        grid_points({"tau": ()})
    with pytest.raises(ValueError, match="grid must be a non-empty mapping"):
        grid_points({})
    x = np.zeros((8, 4), np.float32)
    with pytest.raises(ValueError, match="grid varies tau; do not also set it"):
        grid_search(x, SPACESHAPES, np.zeros(8, int), grid={"tau": (0.5, 1.0)}, tau=0.5)


def test_a_hierarchy_without_categoricals_trains_and_encodes():
    """One path: every point is assigned it, no code is ever zeroed as inactive, and
    the loss still falls."""
    flat = Hierarchy(Group(("z0", "z1")))
    x = np.random.default_rng(0).normal(size=(64, 8)).astype("float32")
    model = COFHAE((8,), flat, hidden_units=(16,), discriminator_units=(16,), random_state=0)
    model.compile(optimizer="adam")
    history = model.fit(x, targets_from_assignments(flat, np.zeros(64, int)), epochs=3, batch_size=32, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    codes = model.encode(x)
    assert codes.shape == (64, 2) and np.all(np.isfinite(codes)) and np.all(codes != 0)
    np.testing.assert_array_equal(model.assignments(x), np.zeros(64))
    assert model.decode(codes).shape == (64, 8)
