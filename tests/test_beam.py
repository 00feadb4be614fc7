"""Generation on Apache Beam: the same examples as the plain build, whatever the runner."""
import os
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("apache_beam", reason="Beam builds need apache-beam: pip install 'hierbench[beam]'")
import tensorflow_datasets as tfds  # noqa: E402

import hier_datasets  # noqa: E402
from hier_datasets.beam_build import GenerateChunks, GenerateSplit  # noqa: E402
from hier_datasets.builder import HierarchicalConfig  # noqa: E402
from hier_datasets.chopsticks import ChopsticksBuilder  # noqa: E402
from hier_datasets.generation import CHUNK, chunk_examples  # noqa: E402

MULTI = "direct_num_workers=2,direct_running_mode=multi_processing"


def stored(builder, split):
    return tfds.as_numpy(builder.as_dataset(split=split, batch_size=-1, shuffle_files=False))


def assert_same_examples(a, b):
    """Same splits, same features, same examples in the same order."""
    for split in ("train", "test"):
        x, y = stored(a, split), stored(b, split)
        assert sorted(x) == sorted(y)
        for name in x:
            np.testing.assert_array_equal(x[name], y[name], err_msg=f"{split}/{name}")


def test_chunks_in_any_order_are_the_plain_examples():
    """Beam's DoFn, fed the chunk starts in reverse, gives the plain generator's keys and
    examples; with observation noise too, which each chunk draws from its own seed."""
    noisy = HierarchicalConfig(name="noisy", train_size=2 * CHUNK + 100, test_size=10, options={"noise": 0.05},
                               process="depth2_either")
    builder = ChopsticksBuilder(config=noisy, data_dir="unused")
    size = noisy.train_size
    plain = dict(builder._generate_examples("train", size))
    transform = GenerateSplit("chopsticks", "depth2_either", {"noise": 0.05}, "train", size)
    assert transform.starts == [0, CHUNK, 2 * CHUNK]
    fn = transform.fn
    fn.setup()
    beam = {}
    for start in reversed(transform.starts):
        beam.update(fn.process(start))
    fn.teardown()
    assert sorted(beam) == sorted(plain) == list(range(size))
    for key in (0, CHUNK - 1, CHUNK, size - 1):
        assert sorted(beam[key]) == sorted(plain[key])
        for name in plain[key]:
            np.testing.assert_array_equal(beam[key][name], plain[key][name])
    # the noise differs between chunks (each has its own seed) but not between runs
    gt = builder.ground_truth
    clean = gt.observations_from_factors(np.stack([plain[k]["factors"] for k in (0, CHUNK)]))
    noise = np.stack([plain[k]["series"] for k in (0, CHUNK)]) - clean
    assert 0.02 < noise.std() < 0.1 and not np.allclose(noise[0], noise[1])


def test_chunk_start_is_checked():
    gt = hier_datasets.ground_truth("chopsticks/depth2_slope")
    factors = gt.sample_factors(10, 0)
    with pytest.raises(ValueError, match="start must be a non-negative multiple of CHUNK"):
        list(chunk_examples(gt, factors, 5, 0))


def test_boxhead_renders_in_one_process_per_beam_worker():
    """A Beam worker loads TensorFlow (to encode images), so Boxhead renders in one
    separate rendering process per worker: workers=1, set in setup (no rendering yet)."""
    from hier_datasets.boxhead import BoxheadBuilder, workers

    assert BoxheadBuilder.BEAM_WORKER_OPTIONS == {"workers": 1}
    fn = GenerateChunks("boxhead", "boxhead1", BoxheadBuilder.BEAM_WORKER_OPTIONS, "test", 10)
    fn.setup()
    assert fn._gt.workers == 1 and fn._factors.shape == (10, 10)
    assert workers.running() == []


def test_beam_build_equals_plain_build(tmp_path):
    """The DirectRunner in this process writes the plain build's examples."""
    name = "chopsticks/depth3_either_300_100"
    plain = hier_datasets.build(name, tmp_path / "plain")
    beam = hier_datasets.build(name, tmp_path / "beam", beam_options="direct_running_mode=in_memory")
    assert beam.info.splits["train"].num_examples == 300
    assert_same_examples(plain, beam)


def test_a_local_build_runs_without_downloading_a_runner(tmp_path, monkeypatch):
    """Beam's DirectRunner would first try its Prism runner, downloading a binary; the
    build runs on the FnApiRunner instead, from TFDS's own options too."""
    import apache_beam as beam
    import tensorflow_datasets as tfds
    from apache_beam.runners.portability import prism_runner

    asked = []

    def refuse(*args, **kwargs):  # the DirectRunner falls back on any error: record the call
        asked.append(args)
        raise RuntimeError("no Prism here")

    monkeypatch.setattr(prism_runner.PrismRunner, "run_pipeline", refuse)
    builder = tfds.builder("chopsticks/depth2_slope_40_20", data_dir=tmp_path)
    builder.download_and_prepare(download_config=tfds.download.DownloadConfig(
        beam_options=beam.options.pipeline_options.PipelineOptions([])))
    assert builder.info.splits["train"].num_examples == 40 and asked == [], "the build asked for Prism"
    plain = hier_datasets.build("chopsticks/depth2_slope_40_20", tmp_path / "plain")
    assert_same_examples(plain, builder)


def test_beam_options_are_checked(tmp_path):
    for bad in (5, "", " , "):
        with pytest.raises(TypeError, match="beam_options must be PipelineOptions or a string"):
            hier_datasets.build("chopsticks/depth2_slope_10_10", tmp_path, beam_options=bad)
    assert not (tmp_path / "chopsticks").exists()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["chopsticks/depth2_either_5000_300", "spaceshapes/default_300_50"])
def test_multiprocess_beam_build_equals_plain_build(tmp_path, name):
    """Two Beam worker processes (DirectRunner multi_processing): the same examples."""
    plain = hier_datasets.build(name, tmp_path / "plain")
    beam = hier_datasets.build(name, tmp_path / "beam", beam_options=MULTI)
    assert_same_examples(plain, beam)


@pytest.mark.slow
def test_boxhead_beam_build_equals_plain_build(tmp_path):
    pytest.importorskip("open3d", reason="rendering Boxhead needs hierbench[boxhead]")
    from hier_datasets.boxhead import workers

    name = "boxhead/boxhead2_600_100"
    plain = hier_datasets.build(name, tmp_path / "plain")
    workers.shutdown()
    beam = hier_datasets.build(name, tmp_path / "beam", beam_options=MULTI)
    assert workers.running() == [], "the Beam build rendered in its worker processes, not here"
    assert_same_examples(plain, beam)


@pytest.mark.slow
def test_tfds_build_command_line(tmp_path):
    """The command of the README: `tfds build ... --imports hier_datasets --beam_pipeline_options=...`."""
    cmd = [sys.executable, "-m", "tensorflow_datasets.scripts.cli.main", "build", "chopsticks/depth2_inter_300_100",
           "--imports", "hier_datasets", "--data_dir", str(tmp_path / "beam"), f"--beam_pipeline_options={MULTI}"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env={**os.environ, "TQDM_DISABLE": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    plain = hier_datasets.build("chopsticks/depth2_inter_300_100", tmp_path / "plain")
    beam = hier_datasets.build("chopsticks/depth2_inter_300_100", tmp_path / "beam")
    assert_same_examples(plain, beam)
