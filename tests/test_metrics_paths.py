"""H-error, purity and coverage (Ross & Doshi-Velez 2021, section 6.2)."""
import copy

import numpy as np
import pytest

import hier_datasets
import hier_metrics as hm
from conftest import MERGED_UP, PUSHED_DOWN
from hier_datasets.hierarchy import Categorical, Group, Hierarchy

SPACESHAPES = hier_datasets.ground_truth("spaceshapes").hierarchy
DEPTH3_EITHER = hier_datasets.ground_truth("chopsticks/depth3_either").hierarchy
DEPTH2_EITHER = hier_datasets.ground_truth("chopsticks/depth2_either").hierarchy


def test_identical_hierarchies_have_zero_error():
    for h in (SPACESHAPES, DEPTH2_EITHER, DEPTH3_EITHER):
        assert hm.h_error(h, h) == 0
        assert hm.h_error(h, Hierarchy.from_json(h.to_json())) == 0


def test_merge_up_and_push_down_have_zero_error():
    assert hm.h_error(SPACESHAPES, PUSHED_DOWN) == 0
    assert hm.h_error(MERGED_UP, SPACESHAPES) == 0
    assert hm.h_error(PUSHED_DOWN, MERGED_UP) == 0


def _depth3_without_two_leaves(drop_categorical: bool) -> Hierarchy:
    """Depth-3 `either` Chopsticks where, after intercept -> intercept, the level-2
    options intercept and slope are missing (12 of 14 paths when the categorical stays)."""
    ref = copy.deepcopy(DEPTH3_EITHER.to_reference())
    level1 = ref[0]["options"][0][1]["options"][1]  # kind0=intercept, chop1=intercept
    if drop_categorical:
        del level1[1]
    else:
        level1[1]["options"] = level1[1]["options"][:1]  # only "stop" left
    return Hierarchy.from_reference(ref)


def test_missing_leaves_count_the_unpaired_paths():
    """Signatures of depth-3 `either`: (1,1,1) x2, (1,1,2,2) x4, (1,1,2,3) x8."""
    kept = _depth3_without_two_leaves(drop_categorical=False)
    assert kept.num_paths == 12
    # the two missing (1,1,2,3) leaves are unpaired
    assert hm.h_error(DEPTH3_EITHER, kept) == 2
    # without the categorical the stop path ends one node earlier: (1,1,2) instead of
    # (1,1,2,2), so it is unpaired too, and so is the (1,1,2,2) path it replaced
    assert hm.h_error(_depth3_without_two_leaves(drop_categorical=True), DEPTH3_EITHER) == 4


def test_depth2_against_depth3():
    """Depth 2: (1,1,1) x2, (1,1,2) x4. Only the two (1,1,1) paths pair up: 4 + 12 = 16."""
    assert hm.h_error(DEPTH2_EITHER, DEPTH3_EITHER) == 16


def test_dimensionality_changes_are_errors():
    a = Hierarchy(Group(("x",), Categorical("c", (("p", Group(("u",))), ("q", Group(("v", "w")))))))
    b = Hierarchy(Group(("x",), Categorical("c", (("p", Group(("u",))), ("q", Group(("v",)))))))
    assert hm.h_error(a, b) == 2
    flat = Hierarchy(Group(("x", "y")))
    assert hm.h_error(flat, Hierarchy(Group(("x", "y", "z")))) == 2


def test_reference_format_is_accepted_and_bad_input_named():
    assert hm.h_error(SPACESHAPES.to_reference(), MERGED_UP) == 0
    with pytest.raises(ValueError, match="hierarchy_b must be"):
        hm.h_error(SPACESHAPES, "x, y")
    with pytest.raises(ValueError, match="hierarchy_a is not a valid"):
        hm.h_error([{"type": "discrete"}], SPACESHAPES)


def test_purity_and_coverage_by_hand():
    true = np.array([0, 0, 0, 1, 1, 2])
    pred = np.array([5, 5, 3, 3, 3, -1])
    # learned path 5: {0, 0} -> 2 of 2; learned path 3: {0, 1, 1} -> 2 of 3; one discarded
    assert hm.purity(true, pred) == pytest.approx(4 / 5)
    assert hm.coverage(pred) == pytest.approx(5 / 6)


def test_purity_only_drops_when_paths_are_merged():
    rng = np.random.default_rng(0)
    true = rng.integers(0, 4, size=1000)
    assert hm.purity(true, true) == 1.0
    assert hm.purity(true, 2 * true + rng.integers(0, 2, size=1000)) == 1.0  # split paths: still pure
    merged = np.where(true == 3, 2, true)  # paths 2 and 3 merged: the minority of the two is impure
    assert hm.purity(true, merged) == pytest.approx(1 - min(np.sum(true == 2), np.sum(true == 3)) / 1000)
    assert hm.purity(true, np.zeros(1000, dtype=int)) == pytest.approx(np.bincount(true).max() / 1000)


def test_everything_discarded():
    assert hm.purity([0, 1, 2], [-1, -1, -1]) == 0.0
    assert hm.coverage([-1, -1, -1]) == 0.0
    assert hm.coverage(np.array([0.0, 1.0, 1.0])) == 1.0


def test_path_label_validation():
    with pytest.raises(ValueError, match="same length"):
        hm.purity([0, 1], [0, 1, 1])
    with pytest.raises(ValueError, match="true_paths must be non-negative"):
        hm.purity([0, -1], [0, 1])
    with pytest.raises(ValueError, match="pred_paths must be path indices >= 0, or -1"):
        hm.purity([0, 1], [0, -2])
    with pytest.raises(ValueError, match="pred_paths must be a 1-D"):
        hm.coverage(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="true_paths is empty"):
        hm.purity([], [])
    with pytest.raises(ValueError, match="pred_paths contains NaN"):
        hm.coverage([0.0, np.nan])
    with pytest.raises(ValueError, match="integer path indices"):
        hm.coverage([0.5, 1.0])


def test_h_error_tree_edit_variant():
    """The authors' later code: unit-cost tree edit distance between trees of groups
    labelled by minimum downstream dimensionality (values checked by hand)."""
    flat = Hierarchy(Group(("x",)))
    split = Hierarchy(Group(("x",), Categorical("c", (("a", Group()), ("b", Group(("z",)))))))
    # paths: (1,) unpaired with (1, 1) and (1, 2) -> 3; tree: delete the two leaf groups -> 2
    assert hm.h_error(flat, split) == 3 and hm.h_error(flat, split, method="tree_edit") == 2
    # merge up / push down keep both at 0
    pushed = Hierarchy(Group((), Categorical("c", (("a", Group(("x",))), ("b", Group(("x2", "z")))))))
    assert hm.h_error(split, pushed) == 0 and hm.h_error(split, pushed, method="tree_edit") == 0
    # option order does not matter
    swapped = Hierarchy(Group(("x",), Categorical("c", (("b", Group(("z",))), ("a", Group())))))
    assert hm.h_error(split, swapped, method="tree_edit") == 0
    with pytest.raises(ValueError, match="method must be 'paths' or 'tree_edit'"):
        hm.h_error(flat, split, method="ted")
