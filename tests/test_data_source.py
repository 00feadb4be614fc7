"""hier_datasets.data_source: random access to the examples of tfds.load, through ArrayRecord."""
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow_datasets as tfds

import hier_datasets

NAME = "spaceshapes/default_300_50"


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("data_source")


@pytest.fixture(scope="module")
def train(data_dir):
    return hier_datasets.data_source(NAME, "train", data_dir)


def loaded(split, data_dir):
    return list(tfds.as_numpy(tfds.load(NAME, split=split, data_dir=str(data_dir), shuffle_files=False)))


def assert_same(a: dict, b: dict):
    assert sorted(a) == sorted(b)
    for name in a:
        assert np.asarray(a[name]).dtype == np.asarray(b[name]).dtype, name
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


def test_same_examples_in_the_same_order_as_tfds_load(train, data_dir):
    reference = loaded("train", data_dir)
    assert len(train) == len(reference) == 300
    for i in range(len(train)):
        assert_same(train[i], reference[i])
    assert isinstance(train[0]["image"], np.ndarray) and train[0]["image"].shape == (64, 64, 1)
    assert isinstance(train[0]["path"], np.int64)


def test_split_slices_and_the_test_split(data_dir):
    sliced = hier_datasets.data_source(NAME, "test[10:20]", data_dir)
    reference = loaded("test[10:20]", data_dir)
    assert len(sliced) == 10
    for i in range(10):
        assert_same(sliced[i], reference[i])


def test_batched_and_negative_reads(train):
    indices = [5, 0, 299, 5]
    batch = train.__getitems__(indices)
    assert len(batch) == 4
    for i, example in zip(indices, batch):
        assert_same(example, train[i])
    assert_same(train[-1], train[299])
    assert_same(train.__getitems__(np.array([-300]))[0], train[0])
    assert train.__getitems__([]) == []


def test_slices_read_the_examples_of_their_indices(train):
    sliced = train[10:14]
    assert isinstance(sliced, list) and len(sliced) == 4
    for i, example in zip(range(10, 14), sliced):
        assert_same(example, train[i])
    assert [int(e["path"]) for e in train[::100]] == [int(train[i]["path"]) for i in (0, 100, 200)]
    assert_same(train[-2:][1], train[299])
    assert train[5:5] == [] and train[400:] == []


def test_resized_config_built_by_an_earlier_process(tmp_path):
    """A build on disk from another process: build() still returns the hierbench
    builder (not TFDS's ReadOnlyBuilder), and the first data_source converts it."""
    name = "chopsticks/depth2_either_40_10"
    script = f"import hier_datasets; hier_datasets.build({name!r}, {str(tmp_path)!r})"
    subprocess.run([sys.executable, "-c", script], check=True, capture_output=True)
    assert not list(tmp_path.rglob("*.array_record-*"))
    builder = hier_datasets.build(name, tmp_path)
    assert type(builder).__name__ == "ChopsticksBuilder"
    assert builder.build_lock_path.name == ".depth2_either_40_10-2.0.0.lock"
    source = hier_datasets.data_source(name, "test", tmp_path)
    reference = list(tfds.as_numpy(tfds.load(name, split="test", data_dir=str(tmp_path), shuffle_files=False)))
    assert len(source) == 10
    for example, expected in zip(source[:], reference):
        assert_same(example, expected)


def test_bad_indices_raise(train):
    with pytest.raises(IndexError, match="index 300 is out of range for a split of 300"):
        train[300]
    with pytest.raises(IndexError, match="index -301"):
        train.__getitems__([0, -301])
    with pytest.raises(TypeError, match="index must be an integer or a slice, got str"):
        train["0"]
    with pytest.raises(TypeError, match="index must be an integer or a slice, got float"):
        train[1.0]
    with pytest.raises(TypeError, match="indices must be a sequence of integers, got int"):
        train.__getitems__(3)


def test_pickles_small_and_reads_the_same(train):
    data = pickle.dumps(train)
    assert len(data) < 500
    copy = pickle.loads(data)
    assert copy._source is None and len(copy) == 300
    assert_same(copy[7], train[7])


def test_arrayrecord_copy_made_once_and_tfrecord_stays_the_default(train, data_dir):
    version_dir = Path(train.version_dir)
    copies = sorted(version_dir.glob("*.array_record-*"))
    assert [p.name.split(".")[0] for p in copies] == ["spaceshapes-test", "spaceshapes-train"]
    stamps = [p.stat().st_mtime_ns for p in copies]
    again = hier_datasets.data_source(NAME, "train", data_dir)
    assert [p.stat().st_mtime_ns for p in copies] == stamps
    assert len(again) == 300
    builder = tfds.builder(NAME, data_dir=str(data_dir))
    assert builder.info.file_format == tfds.core.FileFormat.TFRECORD
    assert len(list(builder.as_dataset(split="test"))) == 50


def test_bad_arguments(data_dir):
    with pytest.raises(TypeError, match="split must be a split name"):
        hier_datasets.data_source(NAME, 0, data_dir)
    with pytest.raises(ValueError, match=r"split 'validation' is not a split of .*splits: \['test', 'train'\]"):
        hier_datasets.data_source(NAME, "validation", data_dir)
    with pytest.raises(TypeError, match="name must be a dataset name"):
        hier_datasets.data_source(3, "train", data_dir)


@pytest.mark.slow
def test_worker_processes_read_the_same(train):
    """As DataLoader workers do: unpickle in fresh processes, read batches there."""
    import concurrent.futures
    import multiprocessing

    batches = [list(range(i, i + 50)) for i in range(0, 300, 50)]
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=context) as pool:
        results = list(pool.map(train.__getitems__, batches))
    for batch, examples in zip(batches, results):
        for i, example in zip(batch, examples):
            assert_same(example, train[i])


def test_read_batch_stacks_the_examples_of_one_batched_read(train):
    indices = np.array([7, 3, 299, 3])
    batch = train.read_batch(indices)
    examples = train.__getitems__(indices)
    assert sorted(batch) == sorted(examples[0])
    for name, values in batch.items():
        assert values.shape[0] == 4 and values.dtype == np.asarray(examples[0][name]).dtype, name
        for row, example in zip(values, examples):
            np.testing.assert_array_equal(row, example[name], err_msg=name)
    assert batch["image"].shape == (4, 64, 64, 1) and batch["path"].shape == (4,)
    with pytest.raises(ValueError, match="at least one index"):
        train.read_batch([])


def test_the_readme_grain_recipe_reads_every_example_once_in_batches(train, monkeypatch):
    """grain.MapDataset over shuffled indices, batched, mapped through read_batch:
    one batched read per batch (never a per-record read), every example once."""
    grain = pytest.importorskip("grain.python")
    monkeypatch.setattr(type(train), "__getitem__", lambda self, index: pytest.fail("per-record read"))
    dataset = grain.MapDataset.range(len(train)).shuffle(seed=0).batch(64).map(train.read_batch).to_iter_dataset()
    batches = list(dataset)
    order = list(grain.MapDataset.range(len(train)).shuffle(seed=0).batch(64))
    assert sorted(np.concatenate(order).tolist()) == list(range(300))
    assert [len(b["path"]) for b in batches] == [64] * 4 + [44]
    for batch, indices in zip(batches, order):
        for name, values in train.read_batch(indices).items():
            np.testing.assert_array_equal(batch[name], values, err_msg=name)


def test_first_use_says_what_it_copies_and_logs_no_tfds_conversion_warnings(tmp_path, capfd, caplog):
    """The first data_source of a dataset version prints one line saying what it does
    (a once-only ArrayRecord copy) and its end, and nothing from TFDS's conversion
    (whose shard-count warning had its placeholders unfilled)."""
    import logging

    name = "chopsticks/depth2_either_40_10"
    hier_datasets.build(name, tmp_path)
    capfd.readouterr()
    with caplog.at_level(logging.INFO):
        source = hier_datasets.data_source(name, "train", tmp_path)
    err = capfd.readouterr().err
    assert "copying the 2 TFRecord shard(s) of chopsticks/depth2_either_40_10/2.0.0 (50 examples" in err
    assert "to ArrayRecord for random access, once for this dataset version" in err
    assert "ArrayRecord copy done in" in err
    assert "Amount of converted shards" not in err + caplog.text
    assert not [r for r in caplog.records if "convert" in r.getMessage().lower()]
    assert len(source) == 40 and len(hier_datasets.data_source(name, "test", tmp_path)) == 10
    hier_datasets.data_source(name, "train", tmp_path)
    assert "ArrayRecord" not in capfd.readouterr().err  # said once, on the first use only
    assert not [p for p in Path(source.version_dir).iterdir() if "incomplete" in p.name]


def test_build_load_and_data_source_of_a_resized_config_log_no_warnings(tmp_path, caplog):
    """TFDS warns "Using custom data configuration: HierarchicalConfig(...)" for every
    resized config, and that a version folder not built yet has no dataset_info.json;
    build(), tfds.load and data_source() of one made by name log no warning."""
    import logging

    import tensorflow_datasets as tfds

    name = "chopsticks/depth2_either_30_10"
    # at INFO on TFDS's (absl's) logger too, which a command run earlier in the process may have set to ERROR
    with caplog.at_level(logging.INFO), caplog.at_level(logging.INFO, logger="absl"):
        tfds.load(name, split="test", data_dir=tmp_path)
        hier_datasets.data_source(name, "test", tmp_path)
        hier_datasets.build(name, tmp_path)
        tfds.load(name, split="train", data_dir=tmp_path)
    assert caplog.records, "TFDS's log records should reach the capture"
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
