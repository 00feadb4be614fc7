"""DCI, split DCI, MIG and SAP: exact values on hand-built cases and the
disentanglement_lib behaviours (perfect ~1, shuffled / constant ~0, duplicates)."""
import numpy as np
import pytest

import hier_metrics as hm
from conftest import MILD_WARPS, STRONG_WARPS, perfect_codes, uniform_factors

N = 1500


@pytest.fixture(scope="module")
def factors():
    return uniform_factors(N)


@pytest.fixture(scope="module")
def level_factors():
    """disentanglement_lib's setting: each factor takes 8 discrete levels in [-1, 1]."""
    return np.random.default_rng(1).integers(0, 8, size=(5000, 5)) / 3.5 - 1.0


# ----------------------------------------------------- DCI from importances
@pytest.mark.parametrize("k", [2, 3, 5, 10])
def test_dci_exact_values(k):
    assert hm.dci_from_importance(np.eye(k)) == {"disentanglement": 1.0, "completeness": 1.0}
    uniform = hm.dci_from_importance(np.ones((k, k)))
    assert uniform["disentanglement"] == pytest.approx(0.0, abs=1e-12)
    assert uniform["completeness"] == pytest.approx(0.0, abs=1e-12)
    # one code drives two of the k factors; nothing else matters (r is codes x factors)
    r = np.zeros((4, k))
    r[0, :2] = [3.0, 3.0]
    res = hm.dci_from_importance(r.T)
    assert res["disentanglement"] == pytest.approx(1 - np.log(2) / np.log(k), abs=1e-12)
    assert res["completeness"] == pytest.approx(1.0, abs=1e-12)


def test_dci_weighted_by_importance():
    """Codes (rows) weighted by their share of the total importance (Eastwood & Williams eq. 3)."""
    r = np.array([[1.0, 0.0], [1.0, 1.0]])  # code 0 pure (weight 1/3), code 1 evenly split (weight 2/3)
    res = hm.dci_from_importance(r.T)  # r is codes x factors
    assert res["disentanglement"] == pytest.approx(1 / 3, abs=1e-12)
    # factor 0 spread evenly over both codes (weight 2/3), factor 1 on code 1 only (weight 1/3)
    assert res["completeness"] == pytest.approx(1 / 3, abs=1e-12)
    # an idle code changes neither score
    res_idle = hm.dci_from_importance(np.vstack([r, np.zeros((1, 2))]).T)
    assert res_idle["disentanglement"] == pytest.approx(1 / 3, abs=1e-12)
    # ... except that completeness is measured in base 3 (codes) now: factor 0 has entropy log 2 / log 3
    assert res_idle["completeness"] == pytest.approx(2 / 3 * (1 - np.log(2) / np.log(3)) + 1 / 3, abs=1e-12)


def test_dci_degenerate_importances_are_finite():
    assert hm.dci_from_importance(np.zeros((3, 4))) == {"disentanglement": 0.0, "completeness": 0.0}
    one_factor = hm.dci_from_importance(np.array([[0.2, 0.8]]))  # one factor, two codes
    assert one_factor["disentanglement"] == 1.0
    assert one_factor["completeness"] == pytest.approx(1 - (-(0.2 * np.log(0.2) + 0.8 * np.log(0.8)) / np.log(2)))
    with pytest.raises(ValueError, match="non-negative"):
        hm.dci_from_importance(-np.eye(2))
    with pytest.raises(ValueError, match="importance contains NaN"):
        hm.dci_from_importance(np.array([[np.nan, 1.0]]))


# ------------------------------------------------------------- DCI on data
def test_dci_perfect_shuffled_constant(factors):
    codes = perfect_codes(factors, STRONG_WARPS)
    perfect = hm.dci(factors, codes)
    assert perfect["disentanglement"] >= 0.95 and perfect["completeness"] >= 0.95
    assert perfect["informativeness_test"] >= 0.95 and perfect["informativeness_train"] >= 0.95
    shuffled = hm.dci(factors, codes[np.random.default_rng(0).permutation(N)])
    assert shuffled["disentanglement"] < 0.2 and shuffled["completeness"] < 0.2
    assert shuffled["informativeness_test"] < 0.05
    constant = hm.dci(factors, np.ones_like(codes))
    assert constant == {"score": 0.0, "disentanglement": 0.0, "completeness": 0.0,
                        "informativeness_train": 0.0, "informativeness_test": 0.0}
    assert perfect["score"] == perfect["disentanglement"]


def test_dci_disentanglement_and_completeness_not_swapped():
    """Reference bug: the importance matrix was passed transposed, swapping D and C.

    Code 0 encodes factors 0 and 1 together, code 1 encodes factor 2. Every factor is
    captured by a single code (C = 1), but code 0 is shared by two factors:
    D = 2/3 * (1 - log 2 / log 3) + 1/3 * 1 = 0.579.
    """
    rng = np.random.default_rng(2)
    v = rng.integers(0, 4, size=(1500, 3)).astype(float)
    codes = np.column_stack([4 * v[:, 0] + v[:, 1], v[:, 2]])
    res = hm.dci(v, codes, categorical=np.zeros(3, dtype=bool))
    assert res["completeness"] > 0.95
    assert res["disentanglement"] == pytest.approx(2 / 3 * (1 - np.log(2) / np.log(3)) + 1 / 3, abs=0.05)


def test_dci_categorical_factors_use_classifiers():
    rng = np.random.default_rng(3)
    v = np.column_stack([rng.integers(0, 3, 900), rng.uniform(size=900)])
    codes = np.column_stack([rng.normal(size=900), np.array([5.0, -2.0, 1.0])[v[:, 0].astype(int)], np.exp(v[:, 1])])
    imp = hm.importance_matrix(v, codes)
    assert imp["importance"].shape == (2, 3)  # factors x codes
    np.testing.assert_array_equal(imp["importance"].argmax(axis=1), [1, 2])
    assert imp["informativeness_test"][0] == pytest.approx(1.0)  # accuracy
    assert imp["informativeness_test"][1] > 0.95  # R^2


def test_dci_lightgbm_backend_agrees_with_the_default(factors):
    """The fast backend: perfect ~1, shuffled low, and D / C / I within 0.05 of the
    scikit-learn backend on the same split, on continuous and categorical factors."""
    pytest.importorskip("lightgbm")
    codes = perfect_codes(factors, STRONG_WARPS)
    fast = hm.dci(factors, codes, backend="lightgbm")
    assert fast["disentanglement"] >= 0.95 and fast["completeness"] >= 0.95 and fast["informativeness_test"] >= 0.95
    shuffled = hm.dci(factors, codes[np.random.default_rng(0).permutation(N)], backend="lightgbm")
    assert shuffled["disentanglement"] < 0.3 and shuffled["informativeness_test"] < 0.05
    rng = np.random.default_rng(5)
    v = np.column_stack([rng.integers(0, 3, 1500), rng.uniform(size=1500), rng.uniform(size=1500)])
    z = np.column_stack([v[:, 0] + 0.3 * rng.normal(size=1500), np.exp(v[:, 1]) + 0.5 * v[:, 2], v[:, 2],
                         rng.normal(size=1500)])
    default, light = hm.importance_matrix(v, z), hm.importance_matrix(v, z, backend="lightgbm")
    np.testing.assert_allclose(light["importance"].sum(axis=1), 1.0)  # normalised per factor, as scikit-learn's
    np.testing.assert_allclose(light["importance"], default["importance"], atol=0.1)
    for key in ("disentanglement", "completeness"):
        assert hm.dci_from_importance(light["importance"])[key] == pytest.approx(
            hm.dci_from_importance(default["importance"])[key], abs=0.05)
    np.testing.assert_allclose(light["informativeness_test"], default["informativeness_test"], atol=0.05)
    with pytest.raises(ValueError, match="backend must be one of"):
        hm.dci(factors, codes, backend="xgboost")


def test_dci_split_scores_each_group_on_its_own_columns():
    """Macro factors are encoded one per code; the micro factors share their codes."""
    rng = np.random.default_rng(4)
    v = rng.uniform(-1, 1, size=(1200, 5))
    codes = np.column_stack([v[:, 0], np.exp(v[:, 1]), v[:, 2],
                             v[:, 3] + v[:, 4], v[:, 3] - v[:, 4]])
    groups = {"macro": ["a", "b", "c"], "micro": [3, 4]}
    res = hm.dci_split(v, codes, groups=groups, factor_names=list("abcde"))
    assert set(res) == {"macro", "micro"}
    assert res["macro"]["disentanglement"] > 0.9 and res["macro"]["completeness"] > 0.9
    # each micro code is split evenly between the two micro factors (D ~ 0); each micro
    # factor is split over 2 of the 5 codes: C ~ 1 - log 2 / log 5
    assert res["micro"]["disentanglement"] < 0.05
    assert res["micro"]["completeness"] == pytest.approx(1 - np.log(2) / np.log(5), abs=0.03)
    full = hm.importance_matrix(v, codes)
    expected = hm.dci_from_importance(full["importance"][[3, 4]])
    assert res["micro"]["disentanglement"] == pytest.approx(expected["disentanglement"])
    assert res["micro"]["completeness"] == pytest.approx(expected["completeness"])
    assert res["micro"]["informativeness_test"] == pytest.approx(full["informativeness_test"][[3, 4]].mean())


def test_dci_split_checks_groups():
    v = uniform_factors(50, 3)
    for groups, message in [({}, "non-empty"), ({"a": []}, "is empty"), ({"a": [3]}, "not a factor index"),
                            ({"a": ["x"]}, "unknown factor"), ({"a": [0, 0]}, "twice"), ([0, 1], "mapping")]:
        with pytest.raises(ValueError, match=message):
            hm.dci_split(v, v, groups=groups)


# --------------------------------------------------------------------- MIG
def test_mig_exact_value():
    """Factor y in {0, 1, 2, 3} (H = log 4); code 0 = y // 2 carries log 2, code 1 nothing."""
    y = np.tile([0.0, 1.0, 2.0, 3.0], 50)[:, None]
    codes = np.column_stack([y[:, 0] // 2, np.zeros(200)])
    res = hm.mig(y, codes)
    assert res["mig"] == pytest.approx(0.5, abs=1e-12) and res["score"] == res["mig"]
    # a second code with the other bit carries as much: the gap closes
    codes[:, 1] = y[:, 0] % 2
    assert hm.mig(y, codes)["mig"] == pytest.approx(0.0, abs=1e-12)


def test_mig_perfect_on_discrete_levels_and_near_zero_when_shuffled(level_factors):
    codes = perfect_codes(level_factors, MILD_WARPS)
    assert hm.mig(level_factors, codes)["mig"] >= 0.95
    shuffled = codes[np.random.default_rng(5).permutation(len(codes))]
    assert hm.mig(level_factors, shuffled)["mig"] < 0.05
    assert hm.mig(level_factors, np.ones_like(codes))["mig"] == 0.0


def test_mig_on_continuous_factors_equal_width_vs_quantile_bins():
    v = uniform_factors(10000)
    warped = perfect_codes(v, STRONG_WARPS)
    assert hm.mig(v, 3 * v - 1)["mig"] >= 0.95  # affine codes: the equal-width bins line up
    assert hm.mig(v, warped, discretization="quantile")["mig"] >= 0.95
    assert hm.mig(v, warped)["mig"] < 0.9  # equal-width bins misalign under non-linear warps


def test_mig_penalises_a_duplicated_code(level_factors):
    codes = perfect_codes(level_factors, MILD_WARPS)
    dup = np.column_stack([codes, -codes[:, 0]])
    # factor 2 is encoded by code 0 and its copy: its gap is 0, so MIG loses 1/5
    assert hm.mig(level_factors, dup)["mig"] == pytest.approx(hm.mig(level_factors, codes)["mig"] - 0.2, abs=0.03)


def test_mig_skips_constant_factors_instead_of_dividing_by_zero(level_factors):
    """Reference bug: MIG divided by a zero entropy (NaN for a constant factor)."""
    codes = perfect_codes(level_factors, MILD_WARPS)
    with_constant = np.column_stack([level_factors, np.full(len(codes), 0.5)])
    with np.errstate(all="raise"):
        res = hm.mig(with_constant, codes)["mig"]
    assert res == pytest.approx(hm.mig(level_factors, codes)["mig"])
    with pytest.raises(ValueError, match="every column of factors is constant"):
        hm.mig(np.ones((100, 2)), np.random.default_rng(0).normal(size=(100, 3)))


# --------------------------------------------------------------------- SAP
def test_sap_exact_value():
    """Code 1 = y + e with e orthogonal to y and as large: squared correlation 1/2."""
    y = np.tile([1.0, -1.0, 1.0, -1.0], 25)[:, None]
    e = np.tile([1.0, 1.0, -1.0, -1.0], 25)
    codes = np.column_stack([y[:, 0], y[:, 0] + e, e])
    res = hm.sap(y, codes)
    assert res["sap"] == pytest.approx(0.5, abs=1e-12) and res["score"] == res["sap"]


def test_sap_perfect_shuffled_constant_duplicated(factors):
    codes = perfect_codes(factors, MILD_WARPS)
    perfect = hm.sap(factors, codes)["sap"]
    assert perfect >= 0.95
    assert hm.sap(factors, codes[np.random.default_rng(6).permutation(N)])["sap"] < 0.05
    assert hm.sap(factors, np.zeros_like(codes))["sap"] == 0.0
    dup = hm.sap(factors, np.column_stack([codes, codes[:, 0]]))["sap"]
    assert dup == pytest.approx(perfect - 0.2 * hm.sap_matrix(factors, codes)[2, 0], abs=0.01)


def test_sap_categorical_factor_uses_a_linear_classifier():
    rng = np.random.default_rng(7)
    y = rng.integers(0, 2, size=(1200, 1)).astype(float)
    codes = np.column_stack([y[:, 0] + 0.1 * rng.normal(size=1200), rng.normal(size=1200)])
    matrix = hm.sap_matrix(y, codes)
    assert matrix[0, 0] > 0.98  # accuracy of the informative code
    assert 0.35 < matrix[0, 1] < 0.65  # chance level for noise


# --------------------------------------------- disentanglement_lib's formulas
def _dlib_discretize(x, num_bins=20):
    """disentanglement_lib's histogram discretisation: np.digitize on np.histogram's edges."""
    return np.column_stack([np.digitize(c, np.histogram(c, num_bins)[1][:-1]) for c in x.T])


def test_mig_and_sap_equal_disentanglement_libs_formulas_on_flat_inputs():
    """No constant factor: exactly the numbers of disentanglement_lib's definitions,
    MIG from sklearn's mutual_info_score on 20-bin histograms, SAP from per-pair
    squared correlations (np.cov) on continuous factors."""
    from sklearn.metrics import mutual_info_score

    rng = np.random.default_rng(11)
    v = rng.uniform(-1, 1, size=(3000, 4))
    z = np.column_stack([v[:, 0] + 0.2 * rng.normal(size=3000), np.exp(v[:, 1]), v[:, 2] - v[:, 3],
                         v[:, 3] ** 3, rng.normal(size=3000)])
    c, f = _dlib_discretize(z), _dlib_discretize(v)
    mi = np.array([[mutual_info_score(f[:, j], c[:, i]) for j in range(4)] for i in range(5)])
    entropy = np.array([mutual_info_score(f[:, j], f[:, j]) for j in range(4)])
    top = np.sort(mi, axis=0)[::-1]
    expected_mig = np.mean((top[0] - top[1]) / entropy)
    assert hm.mig(v, z)["mig"] == pytest.approx(expected_mig, abs=1e-12)
    r2 = np.array([[np.cov(z[:, i], v[:, j])[0, 1] ** 2 / (np.var(z[:, i], ddof=1) * np.var(v[:, j], ddof=1))
                    for j in range(4)] for i in range(5)])
    top = np.sort(r2, axis=0)[::-1]
    assert hm.sap(v, z)["sap"] == pytest.approx(np.mean(top[0] - top[1]), abs=1e-12)
