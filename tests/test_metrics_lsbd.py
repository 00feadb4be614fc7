"""LSBD metric (Perez Rey et al.) for SO(2) tori and cylinders."""
import numpy as np
import pytest

import hier_metrics as hm


def angles(*sizes):
    return np.meshgrid(*[2 * np.pi * np.arange(n) / n for n in sizes], indexing="ij")


def torus(frequencies, sizes):
    """(cos w_k theta_k, sin w_k theta_k) for every subgroup k, on the full grid."""
    return np.concatenate(
        [np.stack([np.cos(w * t), np.sin(w * t)], axis=-1) for w, t in zip(frequencies, angles(*sizes))], axis=-1
    )


@pytest.mark.parametrize("frequencies, sizes", [((1, 1), (12, 15)), ((2, -3), (16, 20)), ((1, 2, 3), (8, 9, 10))])
def test_perfect_embedding_scores_zero_after_a_linear_map(frequencies, sizes):
    rng = np.random.default_rng(0)
    codes = torus(frequencies, sizes)
    k = len(frequencies)
    mapped = codes @ rng.normal(size=(2 * k, 2 * k + 3)) + rng.normal(size=2 * k + 3)
    for c in (codes, mapped):
        res = hm.lsbd(c)
        assert res["score"] < 1e-6
        np.testing.assert_array_equal(np.abs(res["omegas"]), np.abs(frequencies))


def test_recovers_the_frequencies_two_and_three():
    res = hm.lsbd(torus((2, -3), (16, 20)) @ np.random.default_rng(1).normal(size=(4, 6)))
    np.testing.assert_array_equal(np.abs(res["omegas"]), [2, 3])
    assert res["omegas"].dtype.kind == "i"


def test_small_noise_scores_small_and_random_codes_about_one():
    rng = np.random.default_rng(2)
    codes = torus((1, 1), (16, 16)) @ rng.normal(size=(4, 6))
    noisy = hm.lsbd(codes + 0.02 * rng.normal(size=codes.shape))["score"]
    assert 0 < noisy < 0.01
    random = hm.lsbd(rng.normal(size=(16, 16, 6)))["score"]
    assert 0.9 < random <= 1.0
    # more noise, higher score
    assert hm.lsbd(codes + 0.3 * rng.normal(size=codes.shape))["score"] > noisy


def test_mixed_subgroups_score_badly():
    """Both angles leak into both planes: not linearly disentangled."""
    t1, t2 = angles(12, 12)
    codes = np.stack([np.cos(t1 + t2), np.sin(t1 + t2), np.cos(t1 - t2), np.sin(t1 - t2)], axis=-1)
    assert hm.lsbd(codes)["score"] > 0.3


def test_wrong_frequency_range_cannot_fit():
    codes = torus((4,), (24,))
    assert hm.lsbd(codes)["score"] < 1e-9
    assert hm.lsbd(codes, omega_range=(-2, 2))["score"] > 0.9


def test_cylinder_shares_omega_across_objects():
    """Each object its own linear map of (cos 2 theta, sin 2 theta): per-object planes
    differ by rotation or reflection, and one omega fits them all."""
    rng = np.random.default_rng(3)
    t = 2 * np.pi * np.arange(24) / 24
    circle = np.stack([np.cos(2 * t), np.sin(2 * t)], axis=-1)
    codes = np.stack([circle @ rng.normal(size=(2, 5)) + rng.normal(size=5) for _ in range(6)])
    res = hm.lsbd(codes, num_object_axes=1)
    assert res["score"] < 1e-9
    np.testing.assert_array_equal(res["omegas"], [2])
    # objects on two axes (3 x 2 objects) give the same answer
    assert hm.lsbd(codes.reshape(3, 2, 24, 5), num_object_axes=2)["score"] < 1e-9


def test_cylinder_objects_with_different_frequencies_cannot_share_omega():
    t = 2 * np.pi * np.arange(24) / 24
    codes = np.stack([np.stack([np.cos(w * t), np.sin(w * t)], axis=-1) for w in (1, 1, 3, 3)])
    res = hm.lsbd(codes, num_object_axes=1)
    assert res["score"] == pytest.approx(0.5, abs=1e-9)  # half the objects fit, half are spread


def test_degenerate_subgroup_scores_one_not_nan():
    codes = np.zeros((10, 12, 4))
    codes[..., :2] = torus((1,), (10,))[:, None, :]  # the second subgroup leaves no trace
    res = hm.lsbd(codes)
    assert res["score"] == pytest.approx(0.5)
    np.testing.assert_array_equal(res["omegas"], [1, 0])
    assert hm.lsbd(np.ones((8, 8, 3)))["score"] == 1.0


def test_input_validation():
    with pytest.raises(ValueError, match="codes_grid must have shape"):
        hm.lsbd(np.zeros(10))
    with pytest.raises(ValueError, match="codes_grid must have shape"):
        hm.lsbd(np.zeros((3, 10, 4)), num_object_axes=2)
    with pytest.raises(ValueError, match="codes_grid contains NaN"):
        hm.lsbd(np.full((8, 8, 2), np.nan))
    with pytest.raises(ValueError, match="codes_grid is empty"):
        hm.lsbd(np.zeros((8, 8, 0)))
    with pytest.raises(ValueError, match="at least 3 angles"):
        hm.lsbd(np.zeros((8, 2, 4)))
    with pytest.raises(ValueError, match="omega_range"):
        hm.lsbd(np.zeros((8, 8, 4)), omega_range=(3, -3))
    with pytest.raises(ValueError, match="num_object_axes"):
        hm.lsbd(np.zeros((8, 8, 4)), num_object_axes=-1)
    with pytest.raises(ValueError, match="codes_grid must be a numeric"):
        hm.lsbd([["a"] * 4] * 4)
