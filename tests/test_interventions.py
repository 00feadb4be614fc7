"""GroundTruth.sample_factors(n, rng, fixed=...): interventions that keep rows on the
distribution (everything that depends on a fixed factor is drawn given it)."""
import numpy as np
import pytest

import hier_datasets


def test_fixed_categorical_chooses_the_branch_and_draws_below_it():
    gt = hier_datasets.ground_truth("spaceshapes")
    f = gt.sample_factors(4000, 0, fixed={"shape": 3})  # ship (option index 2, stored + 1)
    gt.validate_factors(f)
    names = gt.factor_names
    assert np.all(f[:, names.index("shape")] == 3)
    # below the ship: jet none / jet in the process's proportions 1/2, 1/2
    jet = f[:, names.index("jet")]
    assert set(np.unique(jet)) == {1.0, 2.0} and abs(np.mean(jet == 2) - 0.5) < 0.03
    assert np.all((f[:, names.index("jetlen")] > 0) == (jet == 2))
    assert np.all(f[:, names.index("phase")] == 0) and np.all(f[:, names.index("shine")] == 0)


def test_fixed_continuous_factor_restricts_to_its_paths_and_takes_per_row_values():
    gt = hier_datasets.ground_truth("spaceshapes")
    values = np.linspace(0.1, 0.9, 50)
    f = gt.sample_factors(50, 1, fixed={"jetlen": values})
    np.testing.assert_allclose(f[:, gt.factor_names.index("jetlen")], values, rtol=1e-6)
    np.testing.assert_array_equal(gt.paths(f), 3)  # ship with jet, the only path with jetlen
    # fixing by column index is the same intervention
    g = gt.sample_factors(50, 1, fixed={gt.factor_names.index("jetlen"): values})
    np.testing.assert_array_equal(f, g)


def test_fixed_nested_chopsticks_keeps_path_proportions_among_allowed_paths():
    gt = hier_datasets.ground_truth("chopsticks/depth2_either")
    f = gt.sample_factors(20000, 2, fixed={"kind0": 2})  # level 0 is a slope
    paths = gt.paths(f)
    allowed = np.flatnonzero(gt.hierarchy.path_choices[:, 0] == 1)
    assert set(np.unique(paths)) == set(allowed.tolist())
    expected = gt.path_probabilities[allowed] / gt.path_probabilities[allowed].sum()
    np.testing.assert_allclose(np.bincount(paths, minlength=gt.hierarchy.num_paths)[allowed] / len(f), expected, atol=0.015)


@pytest.mark.parametrize("variant", ["boxhead1", "boxhead2", "boxhead3"])
def test_boxhead_micro_hues_follow_a_fixed_macro_hue(variant):
    gt = hier_datasets.ground_truth(f"boxhead/{variant}", workers=0)
    names = gt.factor_names
    ref = gt.sample_factors(1, 5)[0]
    f = gt.sample_factors(2000, 3, fixed={"macro_hue": ref[names.index("macro_hue")]})
    labels = gt.labels(f)  # on the distribution: every own draw is one of its levels
    assert np.all(f[:, names.index("macro_hue")] == ref[names.index("macro_hue")])
    micro = f[:, [names.index(f"micro_hue{i}") for i in range(1, 5)]]
    offset = np.mod(micro - ref[names.index("macro_hue")] + 0.5, 1.0) - 0.5
    # the micro hues scatter around the fixed macro hue with their own offsets, uniform over 4 levels
    assert np.abs(offset).max() < {"boxhead1": 0.1, "boxhead2": 0.3, "boxhead3": 0.6}[variant]
    np.testing.assert_allclose(np.bincount(labels[:, 6], minlength=4) / len(f), 0.25, atol=0.04)
    if variant == "boxhead1":
        # in Boxhead 1 the macro hue is the cube hue plus a discrete offset: the cube hue is
        # drawn from its conditional distribution (here a single value)
        assert np.unique(f[:, names.index("cube_hue")]).size == 1


def test_boxhead1_macro_hue_is_drawn_given_a_fixed_cube_hue():
    gt = hier_datasets.ground_truth("boxhead/boxhead1", workers=0)
    f = gt.sample_factors(3000, 4, fixed={"cube_hue": 0.05})
    labels = gt.labels(f)
    offset = np.mod(f[:, gt.factor_names.index("macro_hue")] - 0.05 + 0.5, 1.0) - 0.5
    np.testing.assert_allclose(np.sort(np.unique(np.round(offset, 6))), np.sort(np.round(gt.levels["macro_hue"], 6)), atol=1e-6)
    np.testing.assert_allclose(np.bincount(labels[:, 5], minlength=7) / len(f), 1 / 7, atol=0.03)


def test_same_seed_same_intervention():
    gt = hier_datasets.ground_truth("boxhead/boxhead2", workers=0)
    a = gt.sample_factors(100, 9, fixed={"micro_hue2": gt.sample_factors(1, 0)[0, 7]})
    b = gt.sample_factors(100, 9, fixed={"micro_hue2": gt.sample_factors(1, 0)[0, 7]})
    np.testing.assert_array_equal(a, b)


def test_bad_interventions_are_named():
    gt = hier_datasets.ground_truth("spaceshapes")
    with pytest.raises(ValueError, match="unknown factor 'colour'"):
        gt.sample_factors(3, 0, fixed={"colour": 1})
    with pytest.raises(ValueError, match=r"'shape'\]: a categorical takes its option index \+ 1, 1..3; got 0"):
        gt.sample_factors(3, 0, fixed={"shape": 0})
    with pytest.raises(ValueError, match=r"'phase'\] is 1.5, out of range"):
        gt.sample_factors(3, 0, fixed={"phase": 1.5})
    with pytest.raises(ValueError, match=r"must be a scalar or have shape \(3,\)"):
        gt.sample_factors(3, 0, fixed={"phase": [0.1, 0.2]})
    with pytest.raises(ValueError, match="no path of 'spaceshapes' has"):
        gt.sample_factors(3, 0, fixed={"shape": 1, "angle": 0.5})  # a moon has no angle
    with pytest.raises(TypeError, match="fixed must be a dict"):
        gt.sample_factors(3, 0, fixed=[("shape", 1)])
    with pytest.raises(ValueError, match="cannot produce"):
        hier_datasets.ground_truth("boxhead/boxhead2", workers=0).sample_factors(3, 0, fixed={"wall_hue": 0.33})
