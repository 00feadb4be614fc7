"""The TFDS builders: features, sizes, stored labels, determinism, failures."""
import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
import tensorflow_datasets as tfds

import hier_datasets
from hier_datasets.builder import sized_config
from hier_datasets.chopsticks import ChopsticksBuilder
from hier_datasets.spaceshapes import SpaceshapesBuilder

HERE = str(Path(__file__).parent)


class ChopsticksBuilderTest(tfds.testing.DatasetBuilderTestCase):
    DATASET_CLASS = ChopsticksBuilder
    BUILDER_CONFIG_NAMES_TO_TEST = [
        sized_config("depth2_either", 60, 20),
        sized_config("depth3_both", 60, 20),
    ]
    SPLITS = {"train": 60, "test": 20}
    EXAMPLE_DIR = HERE


class SpaceshapesBuilderTest(tfds.testing.DatasetBuilderTestCase):
    DATASET_CLASS = SpaceshapesBuilder
    BUILDER_CONFIG_NAMES_TO_TEST = [sized_config("default", 54, 6)]
    SPLITS = {"train": 54, "test": 6}
    EXAMPLE_DIR = HERE


def build(tmp_path, name, config, train=300, test=100):
    family = {"chopsticks": ChopsticksBuilder, "spaceshapes": SpaceshapesBuilder}[name]
    builder = family(config=sized_config(config, train, test), data_dir=str(tmp_path))
    builder.download_and_prepare()
    return builder


def test_registered_configs():
    assert "chopsticks" in tfds.list_builders() and "spaceshapes" in tfds.list_builders()
    names = [c.name for c in ChopsticksBuilder.BUILDER_CONFIGS]
    variants = ("slope", "inter", "both", "either")
    assert names == [f"depth{d}_{v}" for d in (2, 3) for v in variants] + [f"depth3_{v}_reference" for v in variants]
    assert all((c.train_size, c.test_size) == (90_000, 10_000) for c in ChopsticksBuilder.BUILDER_CONFIGS)
    (ss,) = SpaceshapesBuilder.BUILDER_CONFIGS
    assert (ss.train_size, ss.test_size) == (54_000, 6_000)


@pytest.mark.parametrize("name, config", [("chopsticks", "depth2_either"), ("spaceshapes", "default")])
def test_stored_examples_match_the_ground_truth(tmp_path, name, config):
    builder = build(tmp_path, name, config)
    gt = hier_datasets.ground_truth(f"{name}/{config}")
    meta = builder.info.metadata
    assert meta["factor_names"] == list(gt.factor_names)
    assert hier_datasets.Hierarchy.from_json(meta["hierarchy"]) == gt.hierarchy
    assert builder.info.supervised_keys == (gt.observation_name, "factors")
    ex = tfds.as_numpy(builder.as_dataset(split="train", batch_size=-1))
    obs = ex[gt.observation_name]
    assert obs.shape == (300, *gt.observation_shape) and obs.dtype == gt.observation_dtype
    np.testing.assert_array_equal(gt.active(ex["factors"]), ex["active"])
    np.testing.assert_array_equal(gt.paths(ex["factors"]), ex["path"])
    # noise-free: re-rendering the stored factors gives the stored observations
    np.testing.assert_array_equal(gt.observations_from_factors(ex["factors"]), obs)
    x, y = next(iter(tfds.as_numpy(builder.as_dataset(split="test", as_supervised=True, batch_size=4))))
    assert x.shape == (4, *gt.observation_shape) and y.shape == (4, gt.num_factors)


def _digest(root: Path) -> str:
    h = hashlib.sha256()
    for f in sorted(root.rglob("*.tfrecord*")):
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return h.hexdigest()


def test_same_config_same_bytes_and_split_seeds_differ(tmp_path):
    a = build(tmp_path / "a", "chopsticks", "depth2_slope", 200, 200)
    b = build(tmp_path / "b", "chopsticks", "depth2_slope", 200, 200)
    assert _digest(Path(a.data_dir)) == _digest(Path(b.data_dir))
    train = tfds.as_numpy(a.as_dataset(split="train", batch_size=-1))["factors"]
    test = tfds.as_numpy(a.as_dataset(split="test", batch_size=-1))["factors"]
    assert not np.isin(train[:, 0], test[:, 0]).any(), "train and test come from different seeds"


def test_failure_leaves_nothing_behind(tmp_path, monkeypatch):
    from hier_datasets.chopsticks import Chopsticks

    def broken(self, factors, rng):
        raise RuntimeError("renderer failed")

    monkeypatch.setattr(Chopsticks, "_observations", broken)
    with pytest.raises(RuntimeError, match="renderer failed"):
        build(tmp_path, "chopsticks", "depth2_inter")
    written = [p.relative_to(tmp_path) for p in tmp_path.rglob("*")]
    half = [p for p in written if "incomplete" in str(p) or p.name == "1.0.0" or ".tfrecord" in p.name]
    assert half == [], half
    assert not (tmp_path / "chopsticks" / "depth2_inter_300_100").exists()
    monkeypatch.undo()
    builder = build(tmp_path, "chopsticks", "depth2_inter", 50, 10)
    assert builder.info.splits["train"].num_examples == 50


def test_resized_names_load_directly(tmp_path):
    ds = tfds.load("chopsticks/depth3_slope_120_30", split="test", data_dir=str(tmp_path))
    assert len(list(ds)) == 30
    builder = tfds.builder("chopsticks/depth3_slope_120_30", data_dir=str(tmp_path))
    assert builder.info.splits["train"].num_examples == 120
    assert builder.info.metadata["factor_names"] == list(hier_datasets.ground_truth("chopsticks/depth3_slope").factor_names)
    with pytest.raises(ValueError, match="depth9_slope_10_10"):
        tfds.builder("chopsticks/depth9_slope_10_10", data_dir=str(tmp_path))


def test_unknown_config_is_rejected(tmp_path):
    with pytest.raises(ValueError, match="depth4_slope"):
        tfds.builder("chopsticks/depth4_slope", data_dir=str(tmp_path))
    with pytest.raises(ValueError, match="train_size must be a positive integer"):
        sized_config("depth2_slope", 0, 10)
    with pytest.raises(ValueError, match="unknown chopsticks config 'depth2_wavy'"):
        ChopsticksBuilder(config=sized_config("depth2_wavy", 10, 10), data_dir=str(tmp_path))


def test_metadata_is_json(tmp_path):
    builder = build(tmp_path, "spaceshapes", "default", 12, 6)
    reloaded = tfds.builder_from_directory(builder.data_dir)
    assert reloaded.info.metadata["path_names"][3] == "shape=ship, jet=jet"
    json.loads(reloaded.info.metadata["hierarchy"])
