"""Split DCI over factor groups: every code per group, or each code in the group of its
largest importance (Chen et al., Boxhead, section 4)."""
import numpy as np
import pytest

import hier_metrics as hm

# factors 0, 1 macro; 2, 3 micro. Codes 0 and 1 each carry one macro factor, code 2
# carries both micro factors evenly, code 3 carries factor 0 and factor 2 equally (a tie).
# Written codes x factors (one row per code), so the calls pass R.T (factors x codes).
R = np.array([
    [1.0, 0.0, 0.0, 0.0],
    [0.0, 1.0, 0.0, 0.0],
    [0.0, 0.0, 1.0, 1.0],
    [1.0, 0.0, 1.0, 0.0],
])
GROUPS = {"macro": [0, 1], "micro": [2, 3]}


def scores(result):
    """{group: (disentanglement, completeness)}, flattened in group order."""
    return [x for v in result.values() for x in (v["disentanglement"], v["completeness"])]


def test_every_code_for_every_group():
    """macro columns: rows (1,0), (0,1), (0,0), (1,0): D = 1; factor 0 sits on 2 of 4 codes
    (1 - log 2 / log 4 = 1/2, weight 2/3), factor 1 on one (1, weight 1/3): C = 2/3.
    micro columns: code 2 even (0, weight 2/3), code 3 pure (1, weight 1/3): D = 1/3;
    factor 2 on 2 of 4 codes (1/2, weight 2/3), factor 3 on one: C = 2/3."""
    res = hm.dci_split_from_importance(R.T, GROUPS)
    assert scores(res) == pytest.approx([1.0, 2 / 3, 1 / 3, 2 / 3], abs=1e-12)
    assert "codes" not in res["macro"]
    assert res == hm.dci_split_from_importance(R.T, GROUPS, code_assignment="all")


def test_each_code_in_the_group_of_its_largest_importance():
    """Codes 0, 1 go to macro (identity: D = C = 1); codes 2, 3 to micro (code 3's tie goes
    to the group listed last) with R = [[1, 1], [1, 0]]: D = 1/3, and factor 2 spread over
    both micro codes (0, weight 2/3), factor 3 on one (1, weight 1/3): C = 1/3."""
    res = hm.dci_split_from_importance(R.T, GROUPS, code_assignment="argmax")
    assert scores(res) == pytest.approx([1.0, 1.0, 1 / 3, 1 / 3], abs=1e-12)
    np.testing.assert_array_equal(res["macro"]["codes"], [0, 1])
    np.testing.assert_array_equal(res["micro"]["codes"], [2, 3])


def test_ties_go_to_the_group_listed_last():
    """Listed micro first, code 3 joins macro: R = [[1, 0], [0, 1], [1, 0]] gives D = 1 and
    C = 2/3 (1 - log 2 / log 3) + 1/3; micro keeps code 2 alone: D = 0, C = 1 (one code)."""
    res = hm.dci_split_from_importance(R.T, {"micro": [2, 3], "macro": [0, 1]}, code_assignment="argmax")
    expected_c = 2 / 3 * (1 - np.log(2) / np.log(3)) + 1 / 3
    assert scores(res) == pytest.approx([0.0, 1.0, 1.0, expected_c], abs=1e-12)  # micro, macro
    np.testing.assert_array_equal(res["macro"]["codes"], [0, 1, 3])


def test_a_code_without_importance_widens_the_last_group():
    """A dead code ties at 0 and joins micro: no weight in D, but completeness now spreads
    over 3 codes: factor 2 on 2 of 3 (1 - log 2 / log 3, weight 2/3), factor 3 on one."""
    res = hm.dci_split_from_importance(np.vstack([R, np.zeros(4)]).T, GROUPS, code_assignment="argmax")
    np.testing.assert_array_equal(res["micro"]["codes"], [2, 3, 4])
    assert res["micro"]["disentanglement"] == pytest.approx(1 / 3, abs=1e-12)
    assert res["micro"]["completeness"] == pytest.approx(2 / 3 * (1 - np.log(2) / np.log(3)) + 1 / 3, abs=1e-12)


def test_a_group_without_codes_scores_zero():
    r = np.array([[1.0, 0.0, 0.2], [0.0, 1.0, 0.1]])
    res = hm.dci_split_from_importance(r.T, {"macro": [0, 1], "micro": [2]}, code_assignment="argmax")
    assert scores(res) == [1.0, 1.0, 0.0, 0.0]
    assert res["micro"]["codes"].size == 0


def test_agrees_with_the_authors_implementation():
    """Chen et al.'s evaluation code gives (macro D, C, micro D, C) = (0.5421524487022171,
    0.42717983149783295, 0.8224149438034194, 0.6290870814435818) and micro codes
    [0, 4, 9, 11] on this seeded importance matrix (10 factors, micro-level hues 3-6, the
    other factors macro; code 11 dead). It adds 1e-11 to every importance, hence the
    tolerance."""
    rng = np.random.default_rng(7)
    r = rng.dirichlet(np.full(10, 0.3), size=12) * rng.uniform(0.2, 1, size=(12, 1))
    r[11] = 0
    groups = {"macro": [0, 1, 2, 7, 8, 9], "micro": [3, 4, 5, 6]}
    res = hm.dci_split_from_importance(r.T, groups, code_assignment="argmax")
    assert scores(res) == pytest.approx(
        [0.5421524487022171, 0.42717983149783295, 0.8224149438034194, 0.6290870814435818],
        abs=1e-8,
    )
    np.testing.assert_array_equal(res["micro"]["codes"], [0, 4, 9, 11])


def test_dci_split_argmax_end_to_end():
    """Macro factors one per code; the two micro factors share codes 3 and 4, which the
    argmax rule gives to micro: completeness over those 2 codes only is ~0, where over
    all 5 codes it is ~1 - log 2 / log 5."""
    rng = np.random.default_rng(4)
    v = rng.uniform(-1, 1, size=(600, 5))
    codes = np.column_stack([v[:, 0], np.exp(v[:, 1]), v[:, 2], v[:, 3] + v[:, 4], v[:, 3] - v[:, 4]])
    groups = {"macro": [0, 1, 2], "micro": [3, 4]}
    res = hm.dci_split(v, codes, groups=groups, code_assignment="argmax")
    np.testing.assert_array_equal(res["macro"]["codes"], [0, 1, 2])
    np.testing.assert_array_equal(res["micro"]["codes"], [3, 4])
    assert res["micro"]["completeness"] < 0.05
    imp = hm.importance_matrix(v, codes)
    expected = hm.dci_split_from_importance(imp["importance"], groups, code_assignment="argmax")
    for g in groups:
        assert res[g]["disentanglement"] == pytest.approx(expected[g]["disentanglement"])
        assert res[g]["completeness"] == pytest.approx(expected[g]["completeness"])
        assert res[g]["informativeness_test"] == pytest.approx(imp["informativeness_test"][groups[g]].mean())
    everything = hm.dci_split(v, codes, groups=groups)
    assert everything["micro"]["completeness"] == pytest.approx(1 - np.log(2) / np.log(5), abs=0.03)


def test_code_assignment_through_evaluate_arrays():
    rng = np.random.default_rng(5)
    v = rng.uniform(-1, 1, size=(200, 3))
    out = hm.evaluate_arrays(
        v, v, metrics=["dci_split"], factor_groups={"a": [0], "b": [1, 2]},
        metric_options={"dci_split": {"code_assignment": "argmax"}},
    )
    assert out["dci_a_codes"] == [0] and out["dci_b_codes"] == [1, 2]


def test_split_input_validation():
    with pytest.raises(ValueError, match="code_assignment must be one of"):
        hm.dci_split_from_importance(R.T, GROUPS, code_assignment="max")
    with pytest.raises(ValueError, match="code_assignment must be one of"):
        hm.dci_split(np.eye(4), np.eye(4), groups=GROUPS, code_assignment=None)
    with pytest.raises(ValueError, match="share factor 1"):
        hm.dci_split_from_importance(R.T, {"a": [0, 1], "b": [1, 2]}, code_assignment="argmax")
    # overlapping groups are fine when every code counts for every group
    assert set(hm.dci_split_from_importance(R.T, {"a": [0, 1], "b": [1, 2]})) == {"a", "b"}
    with pytest.raises(ValueError, match="importance must be non-negative"):
        hm.dci_split_from_importance((-R).T, GROUPS)
    with pytest.raises(ValueError, match="unknown factor"):
        hm.dci_split_from_importance(R.T, {"a": ["x"]})
    with pytest.raises(ValueError, match="importance"):
        hm.dci_split_from_importance(np.array([[np.nan, 1.0]]).T, {"a": [0]})
