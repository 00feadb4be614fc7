"""Boxhead 1-3 without rendering (Chen et al. 2022, appendix B.1): factors,
discretisation, hue colours, validation; none of it needs Open3D or PyVista."""
import ast
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import hier_datasets
from boxhead_factors import IDX, MICRO, circ, row
from hier_datasets.boxhead import generator
from hier_datasets.boxhead.generator import (
    FACTOR_NAMES,
    VARIANTS,
    Boxhead,
    hue_to_rgb,
    normal_levels,
    own_levels,
    rgb_to_hue,
    uniform_levels,
)

N = 20_000


# ------------------------------------------------------------------- factors
def test_layout_levels_and_metadata():
    for variant in VARIANTS:
        gt = hier_datasets.ground_truth(f"boxhead/{variant}", workers=1)
        assert gt.factor_names == FACTOR_NAMES and gt.hierarchy.num_paths == 1
        assert gt.observation_shape == (64, 64, 3) and gt.observation_dtype == np.uint8
        levels = dict(zip(FACTOR_NAMES, gt.num_levels))
        assert levels == {**{n: 10 for n in FACTOR_NAMES[:5]}, "macro_hue": 7, **{m: 4 for m in MICRO}}
        meta = gt.metadata()
        arrows = [tuple(a) for a in meta["dependencies"]]
        assert (("cube_hue", "macro_hue") in arrows) == (variant == "boxhead1")
        assert [a for a in arrows if a[0] == "macro_hue"] == [("macro_hue", m) for m in MICRO]
        assert meta["macro_factors"] == ["floor_hue", "wall_hue", "cube_hue", "azimuth", "scale"]
        assert meta["micro_factors"] == MICRO
        assert meta["num_levels"]["macro_hue"] == 7 and len(meta["level_values"]["micro_hue3"]) == 4


def test_discretised_levels():
    np.testing.assert_allclose(uniform_levels(0, 1, 10), np.arange(10) / 10 + 0.05)
    np.testing.assert_allclose(uniform_levels(1, 1.25, 10)[[0, -1]], [1.0125, 1.2375])
    # two halves of N(0, 1) have means -/+ sqrt(2 / pi)
    np.testing.assert_allclose(normal_levels(1.0, 2), [-math.sqrt(2 / math.pi), math.sqrt(2 / math.pi)])
    for sigma, n in ((0.1, 4), (0.2, 4), (0.2, 7)):
        lv = normal_levels(sigma, n)
        assert np.all(np.diff(lv) > 0) and abs(lv.mean()) < 1e-12
        np.testing.assert_allclose(lv, -lv[::-1], atol=1e-12)
        # the spread of the slice means is just under sigma (the within-slice spread is dropped)
        assert 0.9 * sigma < np.sqrt(np.mean(lv**2)) < sigma
    lv = own_levels("boxhead1")
    assert np.all(np.abs(lv["micro_hue1"]) <= 0.1) and len(lv["macro_hue"]) == 7


def test_hue_colours_match_colorsys():
    import colorsys

    hues = np.linspace(0, 1, 97)
    expected = np.array([colorsys.hls_to_rgb(h, 0.5, 1.0) for h in hues])
    np.testing.assert_allclose(hue_to_rgb(hues), expected, atol=1e-12)
    np.testing.assert_allclose(circ(rgb_to_hue(expected), hues), 0, atol=1e-12)
    np.testing.assert_allclose(hue_to_rgb(1.0), hue_to_rgb(0.0))


@pytest.mark.parametrize("variant", VARIANTS)
def test_factor_statistics(variant):
    gt = Boxhead(variant, workers=1)
    f = gt.sample_factors(N, 11).astype(np.float64)
    labels = gt.labels(f)
    assert f.dtype == np.float64 and f.shape == (N, 10)
    hue_cols = [IDX[n] for n in ("wall_hue", "floor_hue", "cube_hue", "macro_hue", *MICRO)]
    assert np.all((f[:, hue_cols] >= 0) & (f[:, hue_cols] < 1))
    assert np.all((f[:, IDX["scale"]] >= 1) & (f[:, IDX["scale"]] <= 1.25))
    assert np.all(np.abs(f[:, IDX["azimuth"]]) <= math.pi / 6)
    for d, name in enumerate(FACTOR_NAMES):
        counts = np.bincount(labels[:, d], minlength=gt.num_levels[d])
        assert len(counts) == gt.num_levels[d], name
        # every level equally likely: within 5 binomial standard deviations
        p = 1 / gt.num_levels[d]
        assert np.all(np.abs(counts - N * p) < 5 * math.sqrt(N * p * (1 - p))), (name, counts)
    for name in ("wall_hue", "floor_hue", "cube_hue", "scale", "azimuth"):
        assert len(np.unique(f[:, IDX[name]])) == 10, name
    macro, cube = f[:, IDX["macro_hue"]], f[:, IDX["cube_hue"]]
    offsets = np.stack([circ(f[:, IDX[m]], macro) for m in MICRO], axis=1)
    # the four micro offsets are drawn independently of each other
    assert np.all(np.abs(np.corrcoef(offsets.T) - np.eye(4)) < 0.05)
    if variant == "boxhead1":
        assert np.all(np.abs(offsets) <= 0.1 + 1e-6), "micro within macro +/- 0.1 (mod 1)"
        assert len(np.unique(np.round(offsets, 6))) == 4
        spread = circ(macro, cube)
        assert 0.9 * 0.2 < spread.std() < 0.2 and abs(spread.mean()) < 0.01
        assert len(np.unique(np.round(spread, 6))) == 7
    else:
        sigma = 0.1 if variant == "boxhead2" else 0.2
        assert 0.9 * sigma < offsets.std() < sigma and abs(offsets.mean()) < 0.01
        np.testing.assert_allclose(np.unique(np.round(macro, 6)), (np.arange(7) + 0.5) / 7, atol=1e-6)
        # macro independent of the cube hue: chi-square on the 10 x 7 table of levels
        from scipy.stats import chi2_contingency

        table = np.histogram2d(labels[:, IDX["cube_hue"]], labels[:, IDX["macro_hue"]], bins=(10, 7))[0]
        assert chi2_contingency(table).pvalue > 1e-4
    # Boxhead 1 ties macro to the cube hue: knowing the cube hue's level narrows the macro hue
    if variant == "boxhead1":
        assert np.mean(np.abs(circ(macro, cube)) < 0.2) > 0.6
    # values are recovered from the labels and the documented levels
    rebuilt = np.empty_like(f)
    for d, name in enumerate(FACTOR_NAMES):
        rebuilt[:, d] = gt.levels[name][labels[:, d]] + (rebuilt[:, gt.parent[d]] if gt.parent[d] >= 0 else 0)
        if gt.circular[d]:
            rebuilt[:, d] = np.mod(rebuilt[:, d], 1.0)
    np.testing.assert_allclose(circ(rebuilt, f), 0, atol=1e-6)


def test_sampling_is_reproducible():
    gt = Boxhead("boxhead2", workers=1)
    np.testing.assert_array_equal(gt.sample_factors(100, 3), gt.sample_factors(100, np.random.default_rng(3)))
    assert not np.array_equal(gt.sample_factors(100, 3), gt.sample_factors(100, 4))
    assert gt.sample_factors(100, 3).dtype == np.float32


def test_default_number_of_processes():
    assert Boxhead().workers == min(len(os.sched_getaffinity(0)), 8)


# --------------------------------------------------------------- bad inputs
def test_bad_inputs():
    with pytest.raises(ValueError, match="unknown boxhead config 'boxhead4'"):
        hier_datasets.ground_truth("boxhead/boxhead4")
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="workers must be an integer >= 0"):
            hier_datasets.ground_truth("boxhead/boxhead1", workers=bad)
    with pytest.raises(ValueError, match="noise"):
        hier_datasets.ground_truth("boxhead/boxhead1", noise=0.1)
    gt = Boxhead("boxhead1", workers=1)
    with pytest.raises(ValueError, match=r"shape \(n, 10\).*micro_hue4"):
        gt.observations_from_factors(np.zeros((2, 9)))
    with pytest.raises(ValueError, match=r"shape \(n, 10\)"):
        gt.observations_from_factors(row())
    for name, value in (("scale", 2.0), ("azimuth", 1.0), ("cube_hue", 1.5), ("micro_hue2", -0.2)):
        with pytest.raises(ValueError, match=f"'{name}' is .*out of range"):
            gt.observations_from_factors(row(**{name: value})[None])
    with pytest.raises(ValueError, match="NaN"):
        gt.observations_from_factors(row(scale=np.nan)[None])
    drawn = gt.sample_factors(3, 0)
    drawn[1, IDX["micro_hue3"]] = (drawn[1, IDX["macro_hue"]] + 0.5) % 1
    with pytest.raises(ValueError, match="row 1: 'micro_hue3' has offset from 'macro_hue'"):
        gt.labels(drawn)
    with pytest.raises(ValueError, match="'scale' has value"):
        gt.labels(gt.sample_factors(3, 0) + np.array([0, 0, 0, 0.01, 0, 0, 0, 0, 0, 0], dtype=np.float32))
    with pytest.raises(ValueError, match="non-negative integer"):
        gt.sample_factors(-1, 0)


# -------------------------------------------------------- without a renderer
WITHOUT_RENDERER = """
import sys
sys.modules["open3d"] = sys.modules["pyvista"] = None  # as if neither were installed
import numpy as np
import hier_datasets
gt = hier_datasets.ground_truth("boxhead/boxhead2")
factors = gt.sample_factors(50, 0)
assert factors.shape == (50, 10) and gt.labels(factors).shape == (50, 10)
for workers in (0, 1):
    try:
        hier_datasets.ground_truth("boxhead/boxhead2", workers=workers).observations_from_factors(factors[:2])
    except ImportError as err:
        print(err)
    else:
        raise AssertionError("rendered without open3d")
"""


def test_factors_without_open3d_and_a_clear_error_on_rendering():
    out = subprocess.run([sys.executable, "-c", WITHOUT_RENDERER], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.splitlines()
    assert len(lines) == 2 and all("open3d and pyvista" in line and "hierbench[boxhead]" in line for line in lines)


def _package_imports(module: str) -> set[str]:
    """The hier_datasets.boxhead modules that ``module`` imports (anywhere in its source)."""
    tree = ast.parse((Path(generator.__file__).parent / f"{module}.py").read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("hier_datasets"):
            if node.module == "hier_datasets.boxhead":
                found.update(alias.name for alias in node.names)
            else:
                found.add(node.module.rpartition(".")[2] if node.module.startswith("hier_datasets.boxhead.") else node.module)
    return found


def test_boxhead_modules_import_in_one_direction():
    """constants is a leaf; scene and workers need it only, never the generator."""
    assert _package_imports("constants") == set()
    assert _package_imports("scene") == {"constants"}
    assert _package_imports("workers") == {"constants", "scene"}
    assert {"constants", "workers", "scene"} <= _package_imports("generator")
