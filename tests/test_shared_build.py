"""Builds in a shared data dir: concurrent builds of one config, interrupted builds."""
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import tensorflow_datasets as tfds

import hier_datasets
import hier_datasets.builder as builder_module


def test_concurrent_builds_of_one_config_share_one_build(tmp_path, monkeypatch):
    """The second builder waits for the first one's lock and then reads its build;
    without the lock it would build too and fail renaming its folder onto the first's."""
    original = builder_module.chunk_examples
    started, chunks = threading.Event(), []

    def slow_chunks(gt, factors, start, seed):
        chunks.append(start)
        started.set()
        time.sleep(1.0)  # the second builder starts while the first is generating
        yield from original(gt, factors, start, seed)

    monkeypatch.setattr(builder_module, "chunk_examples", slow_chunks)
    name = "chopsticks/depth2_both_200_50"
    builders = [tfds.builder(name, data_dir=str(tmp_path)) for _ in range(2)]  # both before any build
    errors = []

    def prepare(builder):
        try:
            builder.download_and_prepare()
        except BaseException as err:  # reported below
            errors.append(err)

    first = threading.Thread(target=prepare, args=(builders[0],))
    first.start()
    assert started.wait(60)
    second = threading.Thread(target=prepare, args=(builders[1],))
    second.start()
    first.join(120)
    second.join(120)
    assert errors == []
    assert chunks == [0, 0], "one build: one chunk of train and one of test"
    for builder in builders:
        assert builder.info.splits["train"].num_examples == 200
        assert len(list(builder.as_dataset(split="test"))) == 50
    assert [p.name for p in (tmp_path / "chopsticks" / "depth2_both_200_50").iterdir()] == ["2.0.0"]


def test_stale_incomplete_folder_is_removed(tmp_path):
    """A build killed before TFDS could clean up leaves ``incomplete.*``; the next build
    of that config and version removes it and succeeds."""
    config_dir = tmp_path / "chopsticks" / "depth2_slope_100_20"
    stale = config_dir / "incomplete.AB12CD_2.0.0"
    stale.mkdir(parents=True)
    (stale / "chopsticks-train.tfrecord-00000-of-00001").write_bytes(b"half a shard")
    builder = hier_datasets.build("chopsticks/depth2_slope_100_20", tmp_path)
    assert [p.name for p in config_dir.iterdir()] == ["2.0.0"]
    assert builder.info.splits["train"].num_examples == 100


def test_lock_file_lies_beside_the_config_folder(tmp_path):
    builder = hier_datasets.build("chopsticks/depth2_slope_30_10", tmp_path)
    lock = builder.build_lock_path
    assert lock == tmp_path / "chopsticks" / ".depth2_slope_30_10-2.0.0.lock" and lock.exists()
    # reused, and readable from its folder, with the lock file there
    again = hier_datasets.build("chopsticks/depth2_slope_30_10", tmp_path)
    assert again.info.splits["test"].num_examples == 10
    assert tfds.builder_from_directory(builder.data_dir).info.splits["train"].num_examples == 30


BUILD = "import sys, hier_datasets; b = hier_datasets.build(sys.argv[1], sys.argv[2]); print(b.info.splits['train'].num_examples)"


@pytest.mark.slow
def test_two_processes_build_one_config(tmp_path):
    name = "chopsticks/depth3_either_40000_1000"
    procs = [
        subprocess.Popen([sys.executable, "-c", BUILD, name, str(tmp_path)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-3000:]
        assert out.split()[-1] == "40000"
    assert [p.name for p in (tmp_path / "chopsticks" / "depth3_either_40000_1000").iterdir()] == ["2.0.0"]


@pytest.mark.slow
def test_killed_build_leaves_nothing_that_blocks_the_next(tmp_path):
    name = "chopsticks/depth2_either_300000_1000"
    config_dir = tmp_path / "chopsticks" / "depth2_either_300000_1000"
    proc = subprocess.Popen([sys.executable, "-c", BUILD, name, str(tmp_path)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while not list(config_dir.glob("incomplete.*/*")) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    proc.kill()
    proc.wait()
    assert list(config_dir.glob("incomplete.*")), "the killed build left its temporary folder"
    builder = hier_datasets.build(name, tmp_path)
    assert builder.info.splits["train"].num_examples == 300_000
    assert sorted(p.name for p in config_dir.iterdir()) == ["2.0.0"]
    assert not list(Path(builder.data_dir).glob("*incomplete*"))
