"""Boxhead 1-3 rendering (Open3D + PyVista), rendering processes and the TFDS builder;
skipped where Open3D or PyVista cannot be imported (test_boxhead.py covers the rest)."""
import ctypes.util
import dataclasses
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("open3d")
pytest.importorskip("pyvista")

import tensorflow_datasets as tfds  # noqa: E402

import hier_datasets  # noqa: E402
from boxhead_factors import IDX, MICRO, circ, row  # noqa: E402
from hier_datasets.boxhead import BoxheadBuilder, generator, workers  # noqa: E402
from hier_datasets.boxhead.generator import FACTOR_NAMES, VARIANTS, Boxhead, rgb_to_hue  # noqa: E402
from hier_datasets.builder import sized_config  # noqa: E402

HERE = str(Path(__file__).parent)
GT = Boxhead(workers=1)


def render(*rows) -> np.ndarray:
    return GT.observations_from_factors(np.stack(rows))


def changed(name, other, **values) -> tuple[np.ndarray, np.ndarray]:
    """(mask of pixels that change when ``name`` is set to ``other``, the image before)."""
    a, b = render(row(**values), row(**{**values, name: other}))
    return np.any(a != b, axis=-1), a


# ----------------------------------------------------------------- rendering
def test_cube_face_pixels_carry_the_cube_hue():
    for azimuth in (math.pi / 6, -math.pi / 6, 0.1):
        for hue in (0.0, 0.37, 0.71):
            mask, img = changed("cube_hue", (hue + 0.5) % 1, cube_hue=hue, azimuth=azimuth)
            assert mask.sum() > 60, (azimuth, mask.sum())
            np.testing.assert_allclose(circ(rgb_to_hue(img[mask]), hue), 0, atol=0.01)
            # a visible side face (not only the rim around the squares): a solid block of cube pixels
            assert mask.any(axis=0).sum() >= 3 + (abs(azimuth) > 0.2) * 3


def test_micro_squares_carry_their_hues_in_a_2x2_block():
    centres = {}
    masks = []
    for name in MICRO:
        mask, img = changed(name, 0.55, azimuth=0.0, scale=1.25)
        assert mask.sum() > 40, (name, mask.sum())
        np.testing.assert_allclose(circ(rgb_to_hue(img[mask]), row()[IDX[name]]), 0, atol=0.01)
        centres[name] = np.argwhere(mask).mean(axis=0)  # (row, column)
        masks.append(mask)
    assert not np.any(np.sum(masks, axis=0) > 1), "the squares do not overlap"
    (r1, c1), (r2, c2), (r3, c3), (r4, c4) = (centres[m] for m in MICRO)
    assert r1 < r3 and r2 < r4 and c1 < c2 and c3 < c4, centres  # 1 2 / 3 4 as seen at azimuth 0
    cube_mask, _ = changed("cube_hue", 0.5, azimuth=0.0, scale=1.25)
    assert not np.any(cube_mask & np.any(masks, axis=0))
    # walls and floor carry theirs
    for name, other in (("wall_hue", 0.1), ("floor_hue", 0.9)):
        mask, img = changed(name, other)
        assert mask.sum() > 300
        np.testing.assert_allclose(circ(rgb_to_hue(img[mask]), row()[IDX[name]]), 0, atol=0.01)


def test_azimuth_changes_the_view_and_scale_the_size():
    left, centre, right = render(row(azimuth=-math.pi / 6), row(azimuth=0.0), row(azimuth=math.pi / 6))
    for a, b in ((left, centre), (centre, right), (left, right)):
        assert np.mean(np.any(a != b, axis=-1)) > 0.05
    sizes = []
    for scale in (1.0, 1.125, 1.25):
        cube, _ = changed("cube_hue", 0.5, scale=scale, azimuth=0.3)
        squares = [changed(m, 0.55, scale=scale, azimuth=0.3)[0] for m in MICRO]
        sizes.append(int(np.sum(cube | np.any(squares, axis=0))))
    assert sizes[0] < sizes[1] < sizes[2], sizes
    assert 1.3 < sizes[2] / sizes[0] < 1.8, sizes  # area grows about like scale ** 2


def test_same_factors_same_image_and_no_state_between_images():
    f = Boxhead("boxhead3", workers=1).sample_factors(40, 2)
    images = render(*f)
    assert images.shape == (40, 64, 64, 3) and images.dtype == np.uint8
    np.testing.assert_array_equal(render(*f[::-1])[::-1], images)
    np.testing.assert_array_equal(render(f[7], f[7])[1], images[7])
    # the room fills the view: no background pixel
    assert not np.any(np.all(images == 0, axis=-1))


def test_factors_between_levels_render():
    """Interventions may use any value in range, not only the levels."""
    img = render(row(cube_hue=0.123, scale=1.01, azimuth=-0.52, macro_hue=1.0, micro_hue1=1.0))
    assert img.shape == (1, 64, 64, 3) and img.std() > 10


HEADLESS = """
import sys
import numpy as np
import hier_datasets
assert not any(m in sys.modules for m in ("open3d", "pyvista", "vtk", "vtkmodules")), "imported eagerly"
factors = hier_datasets.ground_truth("boxhead/boxhead1").sample_factors(6, 0)
# in this process (no TensorFlow here), and in a rendering process
here = hier_datasets.ground_truth("boxhead/boxhead1", workers=0).observations_from_factors(factors)
there = hier_datasets.ground_truth("boxhead/boxhead1", workers=1).observations_from_factors(factors)
assert here.shape == (6, 64, 64, 3) and here.std() > 10
assert np.array_equal(here, there)
# a scene built for one image draws what the reused scene draws
from hier_datasets.boxhead import scene
for i in range(3):
    fresh = scene.Scene()
    assert np.array_equal(fresh.render(factors[i : i + 1].astype(np.float64))[0], here[i]), i
    fresh.close()
print("rendered")
"""


def test_headless_in_process_and_lazy_imports():
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    out = subprocess.run([sys.executable, "-c", HEADLESS], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and "rendered" in out.stdout, out.stderr[-3000:]
    assert "Exception ignored" not in out.stderr, out.stderr[-3000:]


OSMESA = """
import sys
import numpy as np
import hier_datasets
gt = hier_datasets.ground_truth("boxhead/boxhead2", workers=0)
np.save(sys.argv[1], gt.observations_from_factors(np.load(sys.argv[2])))
from hier_datasets.boxhead import scene
print(type(scene._SCENE.window).__name__)
"""


@pytest.mark.skipif(ctypes.util.find_library("OSMesa") is None, reason="libOSMesa (Debian: libosmesa6) not installed")
def test_osmesa_gives_the_same_bytes_as_egl(tmp_path):
    f = Boxhead("boxhead2", workers=1).sample_factors(30, 4)
    np.save(tmp_path / "factors.npy", f)
    env = {k: v for k, v in os.environ.items() if k != "DISPLAY"}
    env["VTK_DEFAULT_OPENGL_WINDOW"] = "vtkOSOpenGLRenderWindow"
    out = subprocess.run(
        [sys.executable, "-c", OSMESA, str(tmp_path / "images.npy"), str(tmp_path / "factors.npy")],
        env=env, capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0 and "vtkOSOpenGLRenderWindow" in out.stdout, out.stderr[-3000:]
    np.testing.assert_array_equal(np.load(tmp_path / "images.npy"), GT.observations_from_factors(f))


def test_in_process_rendering_refuses_to_run_beside_tensorflow():
    import tensorflow  # noqa: F401  (the builders' process has it)

    with pytest.raises(RuntimeError, match="TensorFlow"):
        Boxhead("boxhead1", workers=0).observations_from_factors(row()[None])


# ------------------------------------------------------------------- workers
def test_identical_images_whatever_the_number_of_processes(monkeypatch):
    monkeypatch.setattr(generator, "MIN_IMAGES_PER_WORKER", 8)
    f = Boxhead("boxhead2", workers=1).sample_factors(50, 9)
    single = Boxhead("boxhead2", workers=1).observations_from_factors(f)
    with Boxhead("boxhead2", workers=3) as gt:
        np.testing.assert_array_equal(gt.observations_from_factors(f), single)
        procs = workers.running()
        assert len(procs) == 3 and all(p.poll() is None for p in procs)
        # 20 rows: two slices of 10 on the running processes
        np.testing.assert_array_equal(gt.observations_from_factors(f[:20]), single[:20])
        # a process that dies is reported, and the next batch starts fresh processes
        procs[1].kill()
        procs[1].wait()
        with pytest.raises(RuntimeError, match="rendering process stopped"):
            gt.observations_from_factors(f)
        np.testing.assert_array_equal(gt.observations_from_factors(f[::-1][:20]), single[::-1][:20])
        procs = workers.running()
        assert len(procs) == 2
    assert workers.running() == [] and all(p.poll() is not None for p in procs), "close() stops the processes"


def test_small_batches_use_one_process():
    workers.shutdown()
    gt = Boxhead("boxhead1", workers=4)
    gt.observations_from_factors(gt.sample_factors(10, 0))
    assert len(workers.running()) == 1


def test_unknown_configs_of_the_builder():
    with pytest.raises(ValueError, match="'boxhead4'"):
        tfds.builder("boxhead/boxhead4")
    with pytest.raises(ValueError, match="unknown boxhead config 'boxhead9'"):
        BoxheadBuilder(config=sized_config("boxhead9", 5, 5))


# ---------------------------------------------------------------------- TFDS
class BoxheadBuilderTest(tfds.testing.DatasetBuilderTestCase):
    DATASET_CLASS = BoxheadBuilder
    BUILDER_CONFIG_NAMES_TO_TEST = [sized_config(v, 12, 4) for v in VARIANTS]
    SPLITS = {"train": 12, "test": 4}
    EXAMPLE_DIR = HERE


def test_registered_configs():
    assert "boxhead" in tfds.list_builders()
    assert [c.name for c in BoxheadBuilder.BUILDER_CONFIGS] == list(VARIANTS)
    assert all(c.train_size >= 100_000 and c.test_size >= 10_000 for c in BoxheadBuilder.BUILDER_CONFIGS)


def test_stored_examples(tmp_path):
    builder = BoxheadBuilder(config=sized_config("boxhead1", 40, 8), data_dir=str(tmp_path))
    builder.download_and_prepare()
    gt = hier_datasets.ground_truth("boxhead/boxhead1", workers=1)
    reloaded = tfds.builder_from_directory(builder.data_dir)
    meta = reloaded.info.metadata
    assert meta["factor_names"] == list(FACTOR_NAMES)
    assert ["cube_hue", "macro_hue"] in meta["dependencies"] and meta["micro_factors"] == MICRO
    ex = tfds.as_numpy(builder.as_dataset(split="train", batch_size=-1))
    assert ex["image"].shape == (40, 64, 64, 3) and ex["image"].dtype == np.uint8
    assert ex["labels"].shape == (40, 10) and ex["labels"].dtype == np.int64
    np.testing.assert_array_equal(gt.labels(ex["factors"]), ex["labels"])
    assert np.all(ex["active"]) and np.all(ex["path"] == 0)
    np.testing.assert_array_equal(gt.observations_from_factors(ex["factors"]), ex["image"])


@pytest.mark.slow
def test_large_build_identical_bytes_across_processes_and_level_counts(tmp_path):
    """A 12,000-image build with one and with two rendering processes writes the same bytes."""
    digests = []
    for processes in (1, 2):
        config = dataclasses.replace(sized_config("boxhead3", 10_000, 2_000), options={"workers": processes})
        builder = BoxheadBuilder(config=config, data_dir=str(tmp_path / str(processes)))
        builder.download_and_prepare()
        digests.append(sorted((f.name, f.read_bytes()) for f in Path(builder.data_dir).glob("*.tfrecord*")))
        labels = tfds.as_numpy(builder.as_dataset(split="train", batch_size=-1))["labels"]
        assert [len(np.unique(labels[:, d])) for d in range(10)] == [10] * 5 + [7] + [4] * 4
    assert digests[0] == digests[1]
