"""The Chopsticks generator against Ross & Doshi-Velez (2021), section 4."""
import itertools
import re

import numpy as np
import pytest

import hier_datasets
from hier_datasets.chopsticks import VARIANTS, Chopsticks, level_start
from hier_datasets.chopsticks.generator import level_count_probabilities

CONFIGS = list(itertools.product((1, 2, 3, 4), VARIANTS))
N = 6000


def series_by_hand(gt: Chopsticks, row: np.ndarray) -> np.ndarray:
    """The documented function, one sample at a time: level l adds c and/or s * t from its start."""
    x = np.zeros(64)
    for name, value in zip(gt.factor_names, row):
        m = re.fullmatch(r"(slope|intercept)(\d+)(@\w+)?", name)
        if m is None or value == 0:
            continue
        start = int(64 * (1 - 0.5 ** int(m.group(2))))
        x[start:] += value * (np.arange(64 - start) if m.group(1) == "slope" else 1.0)
    return x


@pytest.mark.parametrize("depth, variant", CONFIGS)
def test_labels_are_consistent(depth, variant):
    gt = Chopsticks(depth, variant)
    factors = gt.sample_factors(N, np.random.default_rng(1))
    paths = gt.paths(factors)
    active = gt.active(factors)
    np.testing.assert_array_equal(active, gt.hierarchy.path_active[paths])
    assert np.all(factors[~active] == 0), "inactive factors must be 0"
    cont = active & ~gt.hierarchy.is_categorical
    assert np.all(factors[cont] != 0)
    assert set(np.unique(paths)) == set(range(gt.hierarchy.num_paths)), "every path is drawn"


@pytest.mark.parametrize("depth, variant", CONFIGS)
def test_series_is_the_documented_function(depth, variant):
    gt = Chopsticks(depth, variant)
    factors, series = gt.sample(300, 7)
    expected = np.stack([series_by_hand(gt, f.astype(np.float64)) for f in factors])
    np.testing.assert_allclose(series, expected, rtol=1e-5, atol=1e-6)
    assert series.dtype == np.float32 and series.shape == (300, 64)


@pytest.mark.parametrize("depth, variant", CONFIGS)
def test_local_rank_equals_active_continuous_factors(depth, variant):
    gt = Chopsticks(depth, variant)
    factors, series = gt.sample(N, 3)
    paths = gt.paths(factors)
    for p in range(gt.hierarchy.num_paths):
        on_path = series[paths == p].astype(np.float64)
        if len(on_path) < 20:
            continue
        centred = on_path - on_path.mean(axis=0)
        assert np.linalg.matrix_rank(centred, tol=1e-4) == gt.hierarchy.path_dim(p), gt.hierarchy.path_names[p]


@pytest.mark.parametrize("depth, variant", [(2, "slope"), (3, "either"), (4, "both"), (5, "inter")])
def test_stopping_level_is_equiprobable(depth, variant):
    gt = Chopsticks(depth, variant)
    n = 40_000
    paths = gt.sample_paths(n, 11)
    per_level = 2 if variant == "both" else 1
    levels = np.array([gt.hierarchy.path_dim(p) // per_level for p in range(gt.hierarchy.num_paths)])[paths]
    freq = np.bincount(levels, minlength=depth + 1)[1:] / n
    np.testing.assert_allclose(freq, 1 / depth, atol=0.012)
    np.testing.assert_allclose(gt.path_probabilities.sum(), 1.0)


def test_either_splits_slope_and_intercept_equally():
    gt = Chopsticks(3, "either")
    factors = gt.sample_factors(40_000, 5)
    kind0 = factors[:, gt.hierarchy.index("kind0")]
    assert abs(kind0.mean() - 1.5) < 0.01  # option index + 1: intercept 1, slope 2
    chop1 = factors[:, [gt.hierarchy.index("chop1@i"), gt.hierarchy.index("chop1@s")]].sum(axis=1)
    # exactly one of the two is active; stop with probability 1/3, else intercept or slope with 1/3 each
    np.testing.assert_allclose(np.bincount(chop1.astype(int), minlength=4)[1:] / len(chop1), [1 / 3] * 3, atol=0.01)


def test_offset_ranges_signs_and_min_offset():
    gt = Chopsticks(2, "both", min_offset=0.5)
    factors = gt.sample_factors(20_000, 2)
    h = gt.hierarchy
    for name, bound in (("intercept0", 0.2), ("slope0", 0.01), ("slope1", 0.01)):
        v = factors[:, h.index(name)]
        v = v[v != 0]
        assert np.all(np.abs(v) <= bound * (1 + 1e-6)) and np.all(np.abs(v) >= 0.5 * bound * (1 - 1e-6))
        assert abs(np.mean(v > 0) - 0.5) < 0.02
        # uniform magnitude on [0.5 b, b]: mean 0.75 b
        assert abs(np.abs(v).mean() / bound - 0.75) < 0.01


def test_noise_is_gaussian_with_the_given_sigma():
    clean = Chopsticks(2, "inter")
    noisy = Chopsticks(2, "inter", noise=0.05)
    factors = clean.sample_factors(2000, 0)
    residual = noisy.observations_from_factors(factors, 9) - clean.observations_from_factors(factors, 9)
    assert abs(residual.std() - 0.05) < 0.002 and abs(residual.mean()) < 0.002


def _level_frequencies(gt, n, seed):
    per_level = 2 if gt.variant == "both" else 1
    levels = np.array([gt.hierarchy.path_dim(p) // per_level for p in range(gt.hierarchy.num_paths)])
    return np.bincount(levels[gt.sample_paths(n, seed)], minlength=gt.depth + 1)[1:] / n


@pytest.mark.parametrize("variant", VARIANTS)
def test_reference_stopping_draws_one_two_three_levels_with_1_4_3_8_3_8(variant):
    gt = hier_datasets.ground_truth(f"chopsticks/depth3_{variant}_reference")
    np.testing.assert_allclose(level_count_probabilities(3, "reference"), [1 / 4, 3 / 8, 3 / 8])
    np.testing.assert_allclose(_level_frequencies(gt, 40_000, 13), [1 / 4, 3 / 8, 3 / 8], atol=0.012)
    np.testing.assert_allclose(gt.path_probabilities.sum(), 1.0)


def test_reference_stopping_continues_with_one_minus_two_to_the_minus_remaining():
    # depth 4: continue with 7/8, then 3/4, then 1/2
    np.testing.assert_allclose(level_count_probabilities(4, "reference"), [8 / 64, 14 / 64, 21 / 64, 21 / 64])
    np.testing.assert_allclose(_level_frequencies(Chopsticks(4, "slope", stopping="reference"), 40_000, 4),
                               [8 / 64, 14 / 64, 21 / 64, 21 / 64], atol=0.012)
    # depth 1 and 2: the same as uniform
    for depth in (1, 2):
        for variant in VARIANTS:
            np.testing.assert_allclose(Chopsticks(depth, variant, stopping="reference").path_probabilities,
                                       Chopsticks(depth, variant).path_probabilities)
    # either, depth 3: after level 0 stop 1/4, intercept or slope 3/8 each; after level 1 stop 1/2
    gt = Chopsticks(3, "either", stopping="reference")
    paths = gt.sample_paths(40_000, 6)
    names = np.array(gt.hierarchy.path_names)[paths]
    depth_of = np.array([gt.hierarchy.path_dim(p) for p in range(gt.hierarchy.num_paths)])[paths]
    assert np.mean(depth_of == 1) == pytest.approx(1 / 4, abs=0.01)
    assert np.mean(depth_of == 3) / np.mean(depth_of >= 2) == pytest.approx(1 / 2, abs=0.01)
    assert len(np.unique(names)) == gt.hierarchy.num_paths


def test_reference_stopping_by_name_keyword_and_tfds_config(tmp_path):
    import tensorflow_datasets as tfds

    from hier_datasets.chopsticks.builder import ChopsticksBuilder

    by_name = hier_datasets.ground_truth("chopsticks/depth3_either_reference")
    by_keyword = hier_datasets.ground_truth("chopsticks/depth3_either", stopping="reference")
    for gt in (by_name, by_keyword):
        assert (gt.name, gt.stopping) == ("chopsticks/depth3_either_reference", "reference")
    assert hier_datasets.ground_truth("chopsticks/depth3_either").stopping == "uniform"
    np.testing.assert_array_equal(by_name.sample(50, 1)[1], by_keyword.sample(50, 1)[1])
    names = [c.name for c in ChopsticksBuilder.BUILDER_CONFIGS]
    assert [n for n in names if n.endswith("_reference")] == [f"depth3_{v}_reference" for v in VARIANTS]
    resized = tfds.builder("chopsticks/depth3_both_reference_60_20", data_dir=str(tmp_path))
    assert resized.ground_truth.name == "chopsticks/depth3_both_reference"
    with pytest.raises(ValueError, match="stopping must be one of \\['uniform', 'reference'\\], got 'random'"):
        Chopsticks(3, "slope", stopping="random")
    with pytest.raises(ValueError, match="has stopping='reference', got stopping='uniform'"):
        hier_datasets.ground_truth("chopsticks/depth3_either_reference", stopping="uniform")
    with pytest.raises(ValueError, match="unknown chopsticks config 'depth3_either_ref'"):
        hier_datasets.ground_truth("chopsticks/depth3_either_ref")


def test_same_seed_same_arrays_different_seed_differs():
    gt = hier_datasets.ground_truth("chopsticks/depth3_either", noise=0.01)
    a = gt.sample(500, np.random.default_rng(42))
    b = gt.sample(500, np.random.default_rng(42))
    c = gt.sample(500, np.random.default_rng(43))
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a[1], c[1])


def test_hierarchy_shapes_match_the_paper():
    # the reference hierarchies: 2 paths at depth 2 (non-either), 6 and 14 for either
    assert Chopsticks(2, "slope").hierarchy.num_paths == 2
    assert Chopsticks(2, "either").hierarchy.num_paths == 6
    assert Chopsticks(3, "either").hierarchy.num_paths == 14
    assert max(Chopsticks(3, "both").hierarchy.path_dim(p) for p in range(3)) == 6
    assert Chopsticks(2, "both").factor_names == ("intercept0", "slope0", "chop1", "intercept1", "slope1")
    assert level_start(0) == 0 and level_start(1) == 32 and level_start(2) == 48


@pytest.mark.parametrize("kwargs, message", [
    (dict(depth=0), "depth must be an integer >= 1"),
    (dict(depth=2.5), "depth must be an integer >= 1"),
    (dict(variant="diagonal"), r"variant must be one of \['slope', 'inter', 'both', 'either'\]"),
    (dict(noise=-0.1), "noise must be a finite number >= 0"),
    (dict(min_offset=1.0), r"min_offset must be in \[0, 1\)"),
])
def test_bad_parameters(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Chopsticks(**{"depth": 2, "variant": "slope", **kwargs})


@pytest.mark.parametrize("name, message", [
    ("chopsticks/depth2_diagonal", "unknown chopsticks config 'depth2_diagonal'"),
    ("chopsticks/deep", "unknown chopsticks config 'deep'"),
    ("chopsticks/depth0_slope", "depth must be an integer >= 1"),
    ("squiggles", "unknown dataset 'squiggles'; available: .*'chopsticks'"),
])
def test_bad_names(name, message):
    with pytest.raises(ValueError, match=message):
        hier_datasets.ground_truth(name)
    with pytest.raises(TypeError, match="name must be a dataset name such as 'chopsticks/depth2_either', got int"):
        hier_datasets.ground_truth(2)


def test_resized_names_are_the_process_of_their_config():
    """tfds.load's ``config_TRAIN_TEST`` names: the suffix sizes only the splits."""
    sized = hier_datasets.ground_truth("chopsticks/depth2_either_5000_1000")
    plain = hier_datasets.ground_truth("chopsticks/depth2_either")
    assert sized.hierarchy.to_json() == plain.hierarchy.to_json()
    a, b = sized.sample(50, np.random.default_rng(3)), plain.sample(50, np.random.default_rng(3))
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    reference = hier_datasets.ground_truth("chopsticks/depth3_both_reference_200_100")
    assert reference.stopping == "reference" and reference.depth == 3
    with pytest.raises(ValueError, match="unknown chopsticks config 'depth2_wavy'"):
        hier_datasets.ground_truth("chopsticks/depth2_wavy_5000_1000")


def test_bad_factors_are_rejected_with_a_clear_message():
    gt = Chopsticks(2, "slope")  # slope0, chop1, slope1
    with pytest.raises(ValueError, match=r"shape \(n, 3\) with columns \['slope0', 'chop1', 'slope1'\]"):
        gt.observations_from_factors(np.zeros((4, 2)))
    with pytest.raises(ValueError, match=r"'slope0' is 0.5, out of range; allowed \|value\| in \[0, 0.01\]"):
        gt.observations_from_factors([[0.5, 1, 0]])
    with pytest.raises(ValueError, match="'slope1' is inactive on this path and must be 0"):
        gt.observations_from_factors([[0.005, 1, 0.005]])
    # categoricals hold option index + 1 (0 means inactive)
    with pytest.raises(ValueError, match=r"categorical 'chop1' is 3, allowed are its option indices \+ 1, 1..2"):
        gt.observations_from_factors([[0.005, 3, 0.0]])
    with pytest.raises(ValueError, match=r"categorical 'chop1' is 0, allowed .* 1..2 \(0 means inactive"):
        gt.observations_from_factors([[0.005, 0, 0.0]])
    with pytest.raises(ValueError, match="NaN or infinite"):
        gt.observations_from_factors([[np.nan, 1, 0]])
    with pytest.raises(ValueError, match=r"allowed \|value\| in \[0.005, 0.01\]"):
        Chopsticks(2, "slope", min_offset=0.5).observations_from_factors([[0.001, 1, 0]])
    with pytest.raises(ValueError, match="n must be a non-negative integer"):
        gt.sample_factors(-1, 0)
    with pytest.raises(TypeError, match="random_state must be an integer seed >= 0 or a numpy Generator, got str"):
        gt.sample_factors(3, "seed")
