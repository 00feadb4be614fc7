"""R^4 and R^4_c (Ross & Doshi-Velez 2021, section 6.3)."""
import numpy as np
import pytest

import hier_datasets
import hier_metrics as hm
from conftest import (
    MERGED_UP,
    MILD_WARPS,
    PERMUTATION,
    PUSHED_DOWN,
    STRONG_WARPS,
    perfect_codes,
    uniform_factors,
)
from hier_datasets.hierarchy import Categorical, Group, Hierarchy
from hier_metrics._univariate import correspondence, directed_scores, random_splits
from hier_metrics._validation import MAX_AUTO_CATEGORIES, resolve_categorical
from hierbench.datasets import dataset_names


@pytest.fixture(scope="module")
def factors():
    return uniform_factors(2000)


def test_perfect_representation_scores_one(factors):
    codes = perfect_codes(factors, STRONG_WARPS)
    res = hm.r4(factors, codes)
    assert res["score"] >= 0.98
    assert res["per_factor"].shape == (5,) and np.all(res["per_factor"] >= 0.97)
    active = np.ones(factors.shape, dtype=bool)
    assert hm.r4c(factors, codes, factor_active=active, code_hierarchy=Hierarchy.flat(5))["score"] >= 0.98


def test_matrix_puts_the_permutation_on_top(factors):
    matrix = hm.r4_matrix(factors, perfect_codes(factors, STRONG_WARPS))
    assert matrix.shape == (5, 5)
    # code j encodes factor PERMUTATION[j] = (2, 0, 4, 1, 3)[j]
    np.testing.assert_array_equal(matrix.argmax(axis=1), [1, 3, 0, 4, 2])
    true = np.zeros((5, 5), dtype=bool)
    true[list(PERMUTATION), np.arange(5)] = True
    assert matrix[true].min() > 0.97
    assert matrix[~true].max() < 0.1


def test_shuffled_and_constant_codes_score_zero(factors):
    codes = perfect_codes(factors, STRONG_WARPS)
    shuffled = codes[np.random.default_rng(1).permutation(len(codes))]
    assert hm.r4(factors, shuffled)["score"] < 0.05
    assert hm.r4(factors, np.ones_like(codes))["score"] == 0.0


def test_duplicated_code_is_not_penalised(factors):
    """Section 6.3: R^4 takes the max over codes, so a duplicate costs nothing."""
    codes = perfect_codes(factors, STRONG_WARPS)
    dup = np.column_stack([codes, codes[:, 0], 2 * codes[:, 1]])
    assert hm.r4(factors, dup)["score"] == pytest.approx(hm.r4(factors, codes)["score"], abs=0.01)


def test_gaussian_noise_gives_the_closed_form_value():
    """V ~ N(0, 1), Z = V + s*eps: both R^2 are 1 / (1 + s^2), so R^4 = 1 / (1 + s^2)."""
    rng = np.random.default_rng(2)
    v = rng.normal(size=(6000, 1))
    for s in (0.5, 1.0, 2.0):
        z = v + s * rng.normal(size=v.shape)
        assert hm.r4(v, z)["score"] == pytest.approx(1 / (1 + s**2), abs=0.03)


def test_one_direction_is_not_enough():
    """Z = V^2 on V in [-1, 1]: Z is predictable from V but not the reverse."""
    v = uniform_factors(3000, 1, seed=3)
    z = v**2
    res = hm.r4(v, z)
    assert res["score"] < 0.1
    rng = np.random.default_rng(0)
    splits = list(random_splits(len(v), 5, 0.25, rng))
    cont = np.zeros(1, dtype=bool)
    assert directed_scores(v, z, cont, splits)[0, 0] > 0.98  # V -> Z
    assert directed_scores(z, v, cont, splits)[0, 0] < 0.05  # Z -> V


def test_categorical_factor_uses_accuracy():
    """A code that merges options 1 and 2 of a balanced 3-option factor V.

    V -> Z is exact (1). Z -> V: accuracy 1/3 + 2/3 * 1/2 = 2/3 as a classifier, so
    R^4 = sqrt(2/3); as a regression the residual variance is 2/3 * 1/4 of var(V) = 2/3,
    R^2 = 3/4 and R^4 would be sqrt(3/4).
    """
    rng = np.random.default_rng(4)
    shape = np.repeat([0.0, 1.0, 2.0], 1000)[:, None]
    codes = np.column_stack([np.where(shape[:, 0] == 0, -1.0, 4.0), rng.normal(size=3000)])
    matrix = hm.r4_matrix(shape, codes)  # "auto" detects the categorical column
    assert matrix[0, 0] == pytest.approx(np.sqrt(2 / 3), abs=0.02)
    assert matrix[0, 1] < 0.05
    as_continuous = hm.r4_matrix(shape, codes, categorical=np.array([False]))
    assert as_continuous[0, 0] == pytest.approx(np.sqrt(3 / 4), abs=0.02)


def test_constant_categorical_target_scores_zero():
    """Accuracy on a constant target is trivially 1; it must not count as information."""
    rng = np.random.default_rng(5)
    cat = np.zeros(1, dtype=bool)
    a = rng.normal(size=(500, 1))
    const = np.zeros((500, 1))
    splits = list(random_splits(500, 3, 0.25, rng))
    assert directed_scores(a, const, np.ones(1, dtype=bool), splits)[0, 0] == 0.0
    assert directed_scores(a, const, cat, splits)[0, 0] == 0.0


def test_binned_estimator_agrees_with_gradient_boosting():
    n, num_splits = 5000, 5
    rng = np.random.default_rng(6)
    v = rng.uniform(0, 1, size=(n, 1))
    z = np.column_stack([np.exp(2 * v[:, 0]) + 0.2 * rng.normal(size=n), np.sin(5 * v[:, 0])])
    cont = np.zeros(2, dtype=bool)
    kw = dict(num_splits=num_splits)
    binned = correspondence(v, z, cont[:1], cont, np.random.default_rng(0), **kw)
    boosted = correspondence(v, z, cont[:1], cont, np.random.default_rng(0), estimator="gbt", **kw)
    assert binned[0, 0] > 0.9 and binned[0, 1] < 0.9  # sin(5v) is not one-to-one on [0, 1]
    np.testing.assert_allclose(binned, boosted, atol=0.03)


@pytest.mark.parametrize("n", [400, 1000])
def test_fifteen_level_factor_read_by_its_identity_scores_one(n):
    """15 integer levels are more than the 10 of a categorical ("auto"), so both
    directions are R^2; an input with few distinct values gets one bin per value, so
    the conditional mean is exact (the authors' boosted trees give 0.995)."""
    for seed in range(3):
        v = np.random.default_rng(seed).integers(0, 15, size=(n, 1)).astype(np.float64)
        assert hm.r4(v, v.copy(), random_state=seed)["score"] >= 0.99
        assert hm.r4(v, np.exp(v / 5), random_state=seed)["score"] >= 0.99


@pytest.mark.parametrize("n", [100, 400, 1000])
@pytest.mark.parametrize("warps", [MILD_WARPS, STRONG_WARPS], ids=["mild", "strong"])
def test_monotone_codes_score_one_from_100_rows(n, warps):
    """Per-bin lines: a bin of width h leaves ~f''^2 h^4 / 720 of variance, so an exact
    one-to-one code scores ~1 even with 10 bins (the bin mean would cap R^2 near
    1 - 1/B^2 with B bins: 0.97 at 400 rows)."""
    for seed in range(3):
        f = uniform_factors(n, 5, seed=seed)
        res = hm.r4(f, perfect_codes(f, warps), random_state=seed)
        assert res["per_factor"].min() >= 0.99, (seed, res["per_factor"])
        noise = np.random.default_rng(seed + 10).normal(size=f.shape)
        assert hm.r4(f, noise, random_state=seed)["score"] < 0.05


@pytest.mark.parametrize("n", [100, 400])
@pytest.mark.parametrize("classes", [4, 10])
def test_categorical_factor_read_by_a_continuous_code(n, classes):
    """Z -> V is a classification; each bin's one-split stump puts the class boundary
    between the clusters (a bin majority alone reached 0.8 with 10 classes)."""
    for seed in range(3):
        rng = np.random.default_rng(seed)
        v = rng.permutation(np.arange(n) % classes)[:, None].astype(np.float64)
        z = np.exp(0.4 * (v + 0.05 * rng.normal(size=v.shape)))
        assert hm.r4(v, z, random_state=seed)["score"] >= 0.98


def test_categorical_threshold_is_ten_values():
    rng = np.random.default_rng(12)
    f = np.column_stack([rng.permutation(np.arange(500) % 10), rng.permutation(np.arange(500) % 11)])
    np.testing.assert_array_equal(resolve_categorical(f.astype(np.float64), "auto", "factors"), [True, False])
    assert MAX_AUTO_CATEGORIES == 10


@pytest.mark.slow
def test_r4_matches_the_reference_method():
    """Per-factor R^4 within 0.02 of scikit-learn's default boosted trees fitted per pair
    in both directions on the same 5 splits (the reference method)."""
    from sklearn.ensemble import GradientBoostingRegressor

    rng = np.random.default_rng(9)
    n = 10000
    v = rng.uniform(0, 1, size=(n, 2))
    z = np.column_stack([np.exp(2 * v[:, 0]), np.sin(3 * v[:, 1]) + 0.1 * rng.normal(size=n), v.sum(axis=1)])
    ours = hm.r4(v, z, random_state=1)["per_factor"]
    splits = list(random_splits(n, 5, 0.25, np.random.default_rng(1)))
    fwd, bwd = np.zeros((2, 3)), np.zeros((2, 3))
    for train, test in splits:
        for i in range(2):
            for j in range(3):
                for x, y, out in ((v[:, i], z[:, j], fwd), (z[:, j], v[:, i], bwd)):
                    pred = GradientBoostingRegressor().fit(x[train, None], y[train]).predict(x[test, None])
                    out[i, j] += 1 - np.sum((y[test] - pred) ** 2) / np.sum((y[test] - y[test].mean()) ** 2)
    reference = np.sqrt(np.maximum(fwd / 5, 0) * np.maximum(bwd / 5, 0)).max(axis=1)
    np.testing.assert_allclose(ours, reference, atol=0.02)


# ------------------------------------------------------------------ R^4_c
SPACESHAPES = hier_datasets.ground_truth("spaceshapes")
H = SPACESHAPES.hierarchy


@pytest.fixture(scope="module")
def spaceshapes_factors():
    f = SPACESHAPES.sample_factors(3000, 0).astype(np.float64)
    return f, SPACESHAPES.active(f)


def _column(f, name):
    return f[:, H.index(name)]


def pushed_down_codes(f):
    codes = np.zeros((len(f), PUSHED_DOWN.num_dims))
    shape = _column(f, "shape")  # codes and factors hold option index + 1 (0: inactive)
    codes[:, PUSHED_DOWN.index("shape")] = shape
    for option, label, own in ((1, "moon", "phase"), (2, "star", "shine"), (3, "ship", "angle")):
        on = shape == option
        codes[on, PUSHED_DOWN.index(f"x_{label}")] = np.exp(2 * _column(f, "x")[on])
        codes[on, PUSHED_DOWN.index(f"y_{label}")] = -_column(f, "y")[on]
        codes[on, PUSHED_DOWN.index(own)] = _column(f, own)[on] ** 2
    codes[:, PUSHED_DOWN.index("jet")] = _column(f, "jet")
    codes[:, PUSHED_DOWN.index("jetlen")] = 3 * _column(f, "jetlen")
    return codes


def merged_up_codes(f):
    merged = _column(f, "phase") + _column(f, "shine") + _column(f, "angle")  # one dim, three meanings
    return np.column_stack([np.exp(_column(f, "x")), _column(f, "y"), merged, _column(f, "shape"),
                            _column(f, "jet"), np.sqrt(_column(f, "jetlen"))])


@pytest.mark.parametrize("layout", ["pushed_down", "merged_up"])
def test_r4c_is_invariant_to_push_down_and_merge_up(spaceshapes_factors, layout):
    f, active = spaceshapes_factors
    codes, hierarchy = (pushed_down_codes(f), PUSHED_DOWN) if layout == "pushed_down" else (merged_up_codes(f), MERGED_UP)
    conditional = hm.r4c(f, codes, factor_active=active, code_hierarchy=hierarchy, categorical=H)
    marginal = hm.r4(f, codes, categorical=H)
    assert conditional["score"] >= 0.97
    assert np.all(conditional["per_factor"] >= 0.95)
    assert marginal["score"] < 0.9
    moved = ["x", "y"] if layout == "pushed_down" else ["phase", "shine", "angle"]
    for name in moved:
        assert marginal["per_factor"][H.index(name)] < 0.8, name


def test_r4c_of_the_true_layout_is_one_and_reduces_to_r4_when_flat(spaceshapes_factors):
    f, active = spaceshapes_factors
    assert hm.r4c(f, f, factor_active=active, code_hierarchy=H)["score"] >= 0.98
    g = uniform_factors(1500, 3, seed=7)
    codes = np.column_stack([np.exp(g[:, 1]), g[:, 0] + 0.5 * g[:, 2], np.sin(2 * g[:, 2])])
    flat = hm.r4c(g, codes, factor_active=np.ones(g.shape, bool), code_hierarchy=Hierarchy.flat(3))
    np.testing.assert_allclose(flat["per_factor"], hm.r4(g, codes)["per_factor"], atol=0.02)


@pytest.mark.parametrize("name", dataset_names())
def test_the_true_factors_are_a_perfect_code_of_every_dataset(name):
    """One encoding for factors and codes: the factors, passed as codes in their own
    hierarchy, are valid and score R4 = R4c = 1 on every registered dataset."""
    gt = hier_datasets.ground_truth(name)
    f = gt.sample_factors(800, 0).astype(np.float64)
    active = gt.active(f)
    np.testing.assert_array_equal(gt.hierarchy.activity_mask(f), active)
    assert hm.r4c(f, f, factor_active=active, code_hierarchy=gt.hierarchy, num_splits=2)["score"] >= 0.98
    assert hm.r4(f, f, num_splits=2)["score"] >= 0.98


def test_r4c_scores_a_missing_branch_by_its_share(spaceshapes_factors):
    """Codes that capture jetlen only on half of its rows score about 1/2 on jetlen."""
    f, active = spaceshapes_factors
    codes = f.copy()
    jetlen = H.index("jetlen")
    on = np.flatnonzero(active[:, jetlen])
    lost = on[: len(on) // 2]
    codes[lost, jetlen] = np.random.default_rng(8).random(lost.size)
    score = hm.r4c(f, codes, factor_active=active, code_hierarchy=H)["per_factor"][jetlen]
    assert 0.15 < score < 0.6


def test_r4c_leaves_out_an_option_where_the_factor_is_constant():
    """V in {1, 2, 3}; a learned categorical sends V = 1 to option a and V in {2, 3} to
    option b, where a dimension reads V. On a's rows V is constant: nothing is left to
    recover there, so a is left out of the tiling and V scores 1 (counting a as 0 would
    give max(R^4(V <-> c) = sqrt(2/3), 2/3 * 1) = 0.82)."""
    rng = np.random.default_rng(13)
    learned = Hierarchy(Group((), Categorical("c", (("a", Group(("za",))), ("b", Group(("zb",)))))))
    v = rng.permutation(np.arange(1500) % 3 + 1.0)[:, None]
    codes = np.zeros((1500, learned.num_dims))
    in_b = v[:, 0] > 1
    codes[:, learned.index("c")] = in_b + 1  # option index + 1: a = 1, b = 2
    codes[:, learned.index("za")] = rng.normal(size=1500)
    codes[in_b, learned.index("zb")] = v[in_b, 0]
    res = hm.r4c(v, codes, factor_active=np.ones(v.shape, bool), code_hierarchy=learned)
    assert res["per_factor"][0] >= 0.99
    assert hm.r4_matrix(v, codes)[0, learned.index("c")] == pytest.approx(np.sqrt(2 / 3), abs=0.02)


def test_r4c_validates_codes_against_the_hierarchy(spaceshapes_factors):
    f, active = spaceshapes_factors
    with pytest.raises(ValueError, match="one column per code_hierarchy dimension"):
        hm.r4c(f, f[:, :5], factor_active=active, code_hierarchy=H)
    bad = f.copy()
    bad[3, H.index("shape")] = 7
    with pytest.raises(ValueError, match="codes do not follow code_hierarchy"):
        hm.r4c(f, bad, factor_active=active, code_hierarchy=H)
    with pytest.raises(ValueError, match="factor_active must have shape"):
        hm.r4c(f, f, factor_active=active[:, :3], code_hierarchy=H)
    with pytest.raises(TypeError, match="code_hierarchy must be"):
        hm.r4c(f, f, factor_active=active, code_hierarchy=H.to_reference())


def test_r4c_defaults_to_flat_codes():
    """Without a code hierarchy the codes are one always-active group (the paper's flat baselines)."""
    g = uniform_factors(800, 3, seed=11)
    codes = np.column_stack([g[:, 2] ** 3, np.exp(g[:, 0]), g[:, 1] + g[:, 2]])
    on = np.ones(g.shape, bool)
    default = hm.r4c(g, codes, factor_active=on)
    explicit = hm.r4c(g, codes, factor_active=on, code_hierarchy=Hierarchy.flat(3))
    np.testing.assert_array_equal(default["per_factor"], explicit["per_factor"])
    assert default["per_factor"][0] >= 0.98 and default["per_factor"][2] >= 0.98
