"""The Spaceshapes renderer and generative process against Ross & Doshi-Velez (2021), section 4."""
import numpy as np
import pytest

import hier_datasets
from hier_datasets.spaceshapes import Spaceshapes

GT = Spaceshapes()
IDX = {name: i for i, name in enumerate(GT.factor_names)}


def one(shape, **values) -> np.ndarray:
    """A factor row for ``shape`` (0 moon, 1 star, 2 ship) with x = y = 0.5 by default.

    ``shape`` and ``jet`` are given as option indices (jet: 0 none, 1 jet); the row
    holds them plus one, as the datasets do. A ship without ``jet`` has none.
    """
    row = np.zeros(len(IDX))
    row[IDX["x"]] = row[IDX["y"]] = 0.5
    row[IDX["shape"]] = shape + 1
    if shape == 2:
        row[IDX["jet"]] = values.pop("jet", 0) + 1
    for name, value in values.items():
        row[IDX[name]] = value
    return row


def pixels(*rows) -> np.ndarray:
    return GT.observations_from_factors(np.stack(rows))[..., 0].astype(int).sum(axis=(1, 2))


def test_factor_layout_and_counts():
    assert GT.factor_names == ("x", "y", "shape", "phase", "shine", "angle", "jet", "jetlen")
    for n, expected in ((54_000, [18_000, 18_000, 9_000, 9_000]), (6_000, [2_000, 2_000, 1_000, 1_000])):
        np.testing.assert_array_equal(np.bincount(GT.paths(GT.sample_factors(n, 0))), expected)
    # n not divisible: the remainder goes to random paths, total exact
    assert len(GT.sample_factors(1001, 0)) == 1001


def test_per_path_active_factors():
    factors = GT.sample_factors(3000, 4)
    active = GT.active(factors)
    paths = GT.paths(factors)
    expected = {0: {"x", "y", "shape", "phase"}, 1: {"x", "y", "shape", "shine"},
                2: {"x", "y", "shape", "angle", "jet"}, 3: {"x", "y", "shape", "angle", "jet", "jetlen"}}
    for p, names in expected.items():
        on = active[paths == p]
        assert np.all(on == np.array([n in names for n in GT.factor_names]))
        assert np.all(factors[paths == p][:, ~on[0]] == 0)
    cont = active & ~GT.hierarchy.is_categorical
    assert factors[cont].min() >= 0 and factors[cont].max() <= 1
    assert abs(factors[cont].mean() - 0.5) < 0.02  # U(0, 1)


def test_images_are_binary_64x64x1():
    factors, images = GT.sample(200, 1)
    assert images.shape == (200, 64, 64, 1) and images.dtype == np.uint8
    assert set(np.unique(images)) == {0, 1}
    assert images.reshape(200, -1).sum(axis=1).min() > 30, "every shape is visible"


def test_translation_moves_the_shape_by_a_quarter_width():
    def centroid(row):
        img = GT.observations_from_factors(row[None])[0, ..., 0]
        r, c = np.nonzero(img)
        return r.mean(), c.mean()

    r0, c0 = centroid(one(1, x=0.5, y=0.5))
    r1, c1 = centroid(one(1, x=1.0, y=0.5))
    r2, c2 = centroid(one(1, x=0.5, y=1.0))
    assert c1 - c0 == pytest.approx(16, abs=0.5) and r1 == pytest.approx(r0, abs=0.5)
    assert r0 - r2 == pytest.approx(16, abs=0.5), "y points up"


def test_continuous_factors_change_the_shapes_monotonically():
    moon = pixels(*(one(0, phase=p) for p in np.linspace(0, 1, 6)))
    star = pixels(*(one(1, shine=s) for s in np.linspace(0, 1, 6)))
    jet = pixels(*(one(2, jet=1, jetlen=j) for j in np.linspace(0.01, 1, 6)))
    assert np.all(np.diff(moon) > 0), "a fuller moon lights more pixels"
    assert np.all(np.diff(star) < 0), "more shine carves the edges deeper"
    assert np.all(np.diff(jet) > 0), "a longer jet covers more pixels"
    full = pixels(one(0, phase=1.0))[0]
    assert full == pytest.approx(np.pi * (0.19 * 64) ** 2, rel=0.05), "full moon = disc of radius 0.19 widths"
    assert pixels(one(2, jet=1, jetlen=0.5))[0] > pixels(one(2, jet=0))[0]


def test_ship_angle_rotates():
    upright = GT.observations_from_factors(one(2, angle=0.5)[None])[0, ..., 0]
    np.testing.assert_array_equal(upright, upright[:, ::-1])
    tilted = GT.observations_from_factors(one(2, angle=0.9)[None])[0, ..., 0]
    assert not np.array_equal(tilted, tilted[:, ::-1])
    assert abs(int(tilted.sum()) - int(upright.sum())) < 0.1 * upright.sum(), "rotation keeps the area"


def test_deterministic_and_chunk_independent():
    from hier_datasets.spaceshapes import render

    factors = GT.sample_factors(700, 3)
    np.testing.assert_array_equal(render(factors, chunk=64), render(factors, chunk=4096))
    a = hier_datasets.ground_truth("spaceshapes").sample(50, 8)
    b = hier_datasets.ground_truth("spaceshapes").sample(50, 8)
    np.testing.assert_array_equal(a[1], b[1])
    assert not np.array_equal(a[0], GT.sample_factors(50, 9))


@pytest.mark.parametrize("row, message", [
    (one(0, phase=1.5), r"'phase' is 1.5, out of range; allowed value in \[0, 1\]"),
    (one(0, x=-0.1), r"'x' is -0.1, out of range"),
    (one(3), r"categorical 'shape' is 4, allowed are its option indices \+ 1, 1..3"),
    (one(-1), r"categorical 'shape' is 0, allowed are its option indices \+ 1, 1..3 \(0 means inactive"),
    (one(0, shine=0.3), "'shine' is inactive on this path and must be 0"),
    (one(2, jet=0, jetlen=0.2), "'jetlen' is inactive on this path"),
])
def test_bad_factors(row, message):
    with pytest.raises(ValueError, match=message):
        GT.observations_from_factors(row[None])


def test_bad_width_and_config():
    with pytest.raises(ValueError, match=r"shape \(n, 8\)"):
        GT.observations_from_factors(np.zeros((2, 6)))
    with pytest.raises(ValueError, match="unknown spaceshapes config 'large'"):
        hier_datasets.ground_truth("spaceshapes/large")
    with pytest.raises(ValueError, match="spaceshapes takes no options"):
        hier_datasets.ground_truth("spaceshapes", noise=0.1)


def test_a_jet_of_length_zero_still_has_its_flame():
    """Whether a ship has a jet is the ``jet`` categorical, not a non-zero ``jetlen``."""
    assert pixels(one(2, jet=1, jetlen=0.0))[0] > pixels(one(2, jet=0))[0]


@pytest.mark.parametrize("shine", [1e-9, 5e-8, 8e-8])
def test_a_barely_carved_star_is_the_plain_diamond(shine):
    """A shine too small to move the arc in float32 draws the plain diamond, not a blank."""
    with np.errstate(all="raise"):
        tiny = GT.observations_from_factors(one(1, shine=shine)[None])
    np.testing.assert_array_equal(tiny, GT.observations_from_factors(one(1, shine=0.0)[None]))
