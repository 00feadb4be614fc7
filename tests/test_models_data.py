"""hier_models.pipeline on tiny TFDS builds (the ``tiny_data_dir`` fixture of conftest.py:
resized configs of the real builders, ``config_TRAIN_TEST``)."""
from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

import hier_datasets
import hier_models
from conftest import CHOPSTICKS, SPACESHAPES


def _stored(name, data_dir, split="train"):
    ds = tfds.load(name, split=split, data_dir=data_dir, shuffle_files=False)
    key = "series" if name.startswith("chopsticks") else "image"
    return np.stack([ex[key] for ex in tfds.as_numpy(ds)])


def _collect(ds):
    return np.concatenate([b.numpy() for b in ds])


def test_series_are_passed_as_stored(tiny_data_dir):
    got = _collect(hier_models.pipeline(CHOPSTICKS, "train", 100, data_dir=tiny_data_dir, shuffle=False))
    stored = _stored(CHOPSTICKS, tiny_data_dir)
    assert got.dtype == np.float32 and got.shape == (512, 64)
    np.testing.assert_array_equal(got, stored)


def test_spaceshapes_images_are_scaled_by_their_maximum_one_not_255(tiny_data_dir):
    got = _collect(hier_models.pipeline(SPACESHAPES, "test", 16, data_dir=tiny_data_dir, shuffle=False))
    stored = _stored(SPACESHAPES, tiny_data_dir, split="test")
    assert got.dtype == np.float32 and got.shape == (64, 64, 64, 1)
    assert set(np.unique(got)) == {0.0, 1.0}
    np.testing.assert_array_equal(got, stored.astype(np.float32))


def test_max_value_overrides_the_scale(tiny_data_dir):
    got = _collect(hier_models.pipeline(SPACESHAPES, "test", 64, data_dir=tiny_data_dir, shuffle=False, max_value=4))
    assert set(np.unique(got)) == {0.0, 0.25}
    with pytest.raises(ValueError, match="max_value"):
        hier_models.pipeline(CHOPSTICKS, "test", 8, data_dir=tiny_data_dir, max_value=2)


def test_rgb_uint8_observations_are_divided_by_255(tiny_data_dir):
    # a builder without a known maximum falls back to the dtype's (255 for uint8)
    from hier_models.data import observation_scale

    builder = tfds.builder(SPACESHAPES, data_dir=tiny_data_dir)
    assert builder.info.metadata["observation_max"] == 1
    assert observation_scale(builder) == 1.0

    class Unknown:
        name = "unknown_rgb"

        class info:
            features = builder.info.features
            supervised_keys = builder.info.supervised_keys
            metadata = {}

    assert observation_scale(Unknown()) == pytest.approx(1 / 255)


@pytest.mark.parametrize("cache", [True, False], ids=["in_memory", "streamed"])
def test_shuffling_is_deterministic_given_the_seed(tiny_data_dir, cache):
    def first_batches(seed):
        ds = hier_models.pipeline(CHOPSTICKS, "train", 64, data_dir=tiny_data_dir, random_state=seed, cache=cache)
        epoch1, epoch2 = _collect(ds), _collect(ds)
        return epoch1, epoch2

    a1, a2 = first_batches(0)
    b1, b2 = first_batches(0)
    c1, _ = first_batches(1)
    np.testing.assert_array_equal(a1, b1)
    np.testing.assert_array_equal(a2, b2)
    assert not np.array_equal(a1, c1)
    assert not np.array_equal(a1, a2)  # reshuffled every epoch
    stored = _stored(CHOPSTICKS, tiny_data_dir)
    assert not np.array_equal(a1, stored)
    # a shuffle is a permutation: the same rows in another order
    np.testing.assert_array_equal(np.sort(a1, axis=0), np.sort(stored, axis=0))


def test_with_factors_yields_pairs_batched_and_prefetched(tiny_data_dir):
    ds = hier_models.pipeline(SPACESHAPES, "train", 32, data_dir=tiny_data_dir, with_factors=True, drop_remainder=True)
    x_spec, y_spec = ds.element_spec
    assert x_spec.shape.as_list() == [32, 64, 64, 1] and x_spec.dtype == tf.float32
    num_factors = len(hier_datasets.ground_truth("spaceshapes").factor_names)
    assert y_spec.shape.as_list() == [32, num_factors]
    assert sum(1 for _ in ds) == 256 // 32


@pytest.mark.parametrize("cache", [True, False], ids=["in_memory", "streamed"])
def test_repeat_and_split_slices(tiny_data_dir, cache):
    ds = hier_models.pipeline(CHOPSTICKS, "train[:100]", 30, data_dir=tiny_data_dir, repeat=True, cache=cache)
    batches = [b.numpy() for b in ds.take(8)]
    assert [len(b) for b in batches[:3]] == [30, 30, 30]
    # two epochs of the 100 rows, each a permutation of them
    rows = np.concatenate(batches)[:200]
    stored = _stored(CHOPSTICKS, tiny_data_dir)[:100]
    if cache:  # whole epochs: 30, 30, 30, 10
        np.testing.assert_array_equal(np.sort(rows[:100], axis=0), np.sort(stored, axis=0))
        np.testing.assert_array_equal(np.sort(rows[100:], axis=0), np.sort(stored, axis=0))
        assert not np.array_equal(rows[:100], rows[100:])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"batch_size": 0}, "batch_size"),
        ({"batch_size": 2.5}, "batch_size"),
        ({"shuffle_buffer": 0}, "shuffle_buffer"),
        ({"random_state": -1}, "random_state"),
    ],
)
def test_bad_arguments_raise(tiny_data_dir, kwargs, match):
    args = {"batch_size": 8, **kwargs}
    with pytest.raises(ValueError, match=match):
        hier_models.pipeline(CHOPSTICKS, "train", data_dir=tiny_data_dir, **args)


def test_random_state_type(tiny_data_dir):
    with pytest.raises(TypeError, match="random_state must be an integer seed"):
        hier_models.pipeline(CHOPSTICKS, "train", 8, data_dir=tiny_data_dir, random_state="zero")


def test_small_splits_are_cached_and_cache_is_validated(tiny_data_dir):
    from hier_models.data import CACHE_LIMIT_BYTES, _split_bytes

    builder = tfds.builder(CHOPSTICKS, data_dir=tiny_data_dir)
    assert _split_bytes(builder.info, "train", ("series",)) == 512 * 64 * 4 <= CACHE_LIMIT_BYTES
    assert _split_bytes(builder.info, "train[:10]", ("series", "factors")) == 10 * (64 + 9) * 4
    stored = _stored(CHOPSTICKS, tiny_data_dir)
    for cache in ("auto", True, False):
        ds = hier_models.pipeline(CHOPSTICKS, "train", 128, data_dir=tiny_data_dir, shuffle=False, cache=cache)
        np.testing.assert_array_equal(_collect(ds), stored)
        np.testing.assert_array_equal(_collect(ds), stored)  # second epoch (from the cache)
    with pytest.raises(ValueError, match="cache"):
        hier_models.pipeline(CHOPSTICKS, "train", 8, data_dir=tiny_data_dir, cache="sometimes")


def test_build_reuses_a_built_dataset_and_checks_its_arguments(tiny_data_dir):
    builder = hier_datasets.build(CHOPSTICKS, tiny_data_dir)
    assert builder.info.splits["train"].num_examples == 512 and builder.info.splits["test"].num_examples == 128
    again = hier_datasets.build(CHOPSTICKS, tiny_data_dir, download=False)
    assert again.data_dir == builder.data_dir
    with pytest.raises(TypeError, match="name must be a dataset name"):
        hier_datasets.build(("chopsticks", "depth2_either"))
    with pytest.raises(TypeError, match="data_dir must be a path"):
        hier_datasets.build(CHOPSTICKS, 3)
    with pytest.raises(TypeError, match="download must be True or False"):
        hier_datasets.build(CHOPSTICKS, tiny_data_dir, download="yes")


def test_arrays_are_scaled_by_the_datasets_recorded_maximum_only(tiny_data_dir):
    """One rule for images: the scale comes from the dataset's metadata (Spaceshapes: 1),
    for TFDS pipelines and numpy arrays alike; nothing is guessed from the values."""
    from hier_models.data import observation_scale
    from hier_models.hierarchical import fit_hierarchical
    from hier_models.training import input_scale, training_dataset

    stored = _stored(SPACESHAPES, tiny_data_dir, split="test")
    assert stored.dtype == np.uint8 and stored.max() == 1
    scale = observation_scale(tfds.builder(SPACESHAPES, data_dir=tiny_data_dir))
    assert scale == 1.0 == 1 / hier_datasets.ground_truth("spaceshapes").observation_max
    from_arrays = _collect(training_dataset(stored, None, 16, shuffle=False, scale=scale))
    from_tfds = _collect(hier_models.pipeline(SPACESHAPES, "test", 16, data_dir=tiny_data_dir, shuffle=False))
    np.testing.assert_array_equal(from_arrays, from_tfds)
    assert set(np.unique(from_arrays)) == {0.0, 1.0}
    # 0..255 colours with their scale; floats as they are
    rgb = np.array([[[[0, 51, 255]]]], np.uint8)
    np.testing.assert_allclose(_collect(training_dataset(rgb, shuffle=False, scale=1 / 255)), [[[[0, 0.2, 1]]]], rtol=1e-6)
    series = np.linspace(-3, 3, 12, dtype=np.float32).reshape(2, 6)
    np.testing.assert_array_equal(_collect(training_dataset(series, shuffle=False)), series)
    assert input_scale(series) is None and input_scale(stored, 0.5) == 0.5
    with pytest.raises(TypeError, match="pass scale=1/observation_max"):
        training_dataset(stored)
    with pytest.raises(TypeError, match="pass scale=1/observation_max"):
        fit_hierarchical(stored, initial_dim=3)  # refused before anything trains
    with pytest.raises(ValueError, match="scale must be a positive finite number"):
        training_dataset(stored, scale=0)
    with pytest.raises(TypeError, match="scale must be a number"):
        training_dataset(stored, scale="1/255")


def test_training_dataset_shuffles_from_random_state():
    from hier_models.training import training_dataset

    series = np.arange(64, dtype=np.float32).reshape(32, 2)
    first = _collect(training_dataset(series, None, 8, random_state=5))
    np.testing.assert_array_equal(first, _collect(training_dataset(series, None, 8, 5)))
    assert not np.array_equal(first, series) and np.array_equal(np.sort(first, axis=0), series)
    with pytest.raises(TypeError, match="random_state must be an integer seed"):
        training_dataset(series, None, 8, random_state=0.5)
