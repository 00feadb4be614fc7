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


def rotation(angle):
    return np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])


def reference_lsbd(grid, omegas=range(-10, 11)):
    """The definition written out for a torus grid (no object axes): whitening from the
    eigenvectors of the covariance matrix, explicit rotation matrices, a loop over omega."""
    sizes = grid.shape[:-1]
    thetas = angles(*sizes)
    per_subgroup = []
    for k in range(len(sizes)):
        z = (grid - grid.mean(axis=k, keepdims=True)).reshape(-1, grid.shape[-1])
        z = z - z.mean(axis=0)
        eigval, eigvec = np.linalg.eigh(z.T @ z / len(z))
        top = np.argsort(eigval)[::-1][:2]
        plane = (z @ eigvec[:, top]) / np.sqrt(2 * eigval[top])
        theta = thetas[k].ravel()
        best = np.inf
        for w in omegas:
            undone = np.array([rotation(-w * th) @ p for th, p in zip(theta, plane)])
            best = min(best, np.mean(np.sum((undone - undone.mean(axis=0)) ** 2, axis=1)))
        per_subgroup.append(best)
    return float(np.mean(per_subgroup))


def test_near_constant_dimensions_do_not_hide_the_plane():
    """Dimensions carrying only tiny noise must not be blown up to the size of the signal."""
    rng = np.random.default_rng(4)
    codes = np.concatenate([torus((1, 1), (16, 16)), 1e-4 * rng.normal(size=(16, 16, 3))], axis=-1)
    res = hm.lsbd(codes)
    assert res["score"] < 1e-3
    np.testing.assert_array_equal(res["omegas"], [1, 1])
    mapped = codes @ rng.normal(size=(7, 7))  # still perfect after an invertible linear map
    assert hm.lsbd(mapped)["score"] < 1e-3


@pytest.mark.parametrize("sd", [0.05, 0.1, 0.3])
def test_noisy_torus_matches_the_definition(sd):
    rng = np.random.default_rng(0)
    base = torus((1, 2), (12, 10))
    codes = np.concatenate([base, np.zeros((12, 10, 2))], axis=-1) + sd * rng.normal(size=(12, 10, 6))
    score = hm.lsbd(codes)["score"]
    assert score == pytest.approx(reference_lsbd(codes), rel=1e-9)
    assert 0 < score < 3 * sd**2  # noise of variance sd^2 per dimension on a unit circle


def test_agrees_with_the_authors_implementation():
    """Perez Rey et al.'s implementation gives 0.01702101743572526 on this seeded input
    (omega search over -10..10 per subgroup). It whitens with the sample variance
    (divisor n - 1), so its value is ours times (n - 1) / n with n = 256 points."""
    base = torus((1, 1), (16, 16))
    codes = base + 0.1 * np.random.default_rng(0).normal(size=base.shape)
    res = hm.lsbd(codes)
    assert res["score"] * 255 / 256 == pytest.approx(0.01702101743572526, rel=1e-9)
    np.testing.assert_array_equal(res["omegas"], [1, 1])


def test_random_codes_score_about_one_like_the_definition():
    codes = np.random.default_rng(6).normal(size=(10, 12, 5))
    score = hm.lsbd(codes)["score"]
    assert score == pytest.approx(reference_lsbd(codes), rel=1e-9)
    assert 0.9 < score <= 1.0
