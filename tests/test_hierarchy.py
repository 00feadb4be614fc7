"""The Hierarchy data model: layout, paths, masks, serialisation, errors."""
import dataclasses
import json
import subprocess
import sys

import numpy as np
import pytest

from hier_datasets.hierarchy import Categorical, Group, Hierarchy

SPACESHAPES_REFERENCE = [
    {"type": "continuous"},
    {"type": "continuous"},
    {
        "type": "categorical",
        "options": [
            [{"type": "continuous"}],
            [{"type": "continuous"}],
            [{"type": "continuous"}, {"type": "categorical", "options": [[], [{"type": "continuous"}]]}],
        ],
    },
]


def spaceshapes_like() -> Hierarchy:
    ship = Group(("angle",), Categorical("jet", (("none", Group()), ("jet", Group(("jetlen",))))))
    shape = Categorical("shape", (("moon", Group(("phase",))), ("star", Group(("shine",))), ("ship", ship)))
    return Hierarchy(Group(("x", "y"), shape))


def test_import_does_not_load_tensorflow():
    code = (
        "import sys\n"
        "import hier_datasets.hierarchy, hier_datasets\n"
        "h = hier_datasets.ground_truth('spaceshapes').hierarchy\n"
        "h.activity_mask(hier_datasets.ground_truth('spaceshapes').sample_factors(10, 0))\n"
        "assert 'tensorflow' not in sys.modules, 'tensorflow was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_this_module_passes_without_tensorflow():
    """Run the other tests of this file in a fresh interpreter and check TF never loaded."""
    code = (
        "import sys, pytest\n"
        f"rc = pytest.main(['-q', '--noconftest', '-p', 'no:cacheprovider', {__file__!r}, '-k', 'not tensorflow'])\n"
        "assert rc == 0, rc\n"
        "assert 'tensorflow' not in sys.modules, 'tensorflow was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)


def test_flat_layout_is_preorder():
    h = spaceshapes_like()
    assert h.names == ("x", "y", "shape", "phase", "shine", "angle", "jet", "jetlen")
    assert h.kinds[2] == "categorical" and h.kinds[6] == "categorical"
    np.testing.assert_array_equal(h.num_options, [0, 0, 3, 0, 0, 0, 2, 0])
    assert h.conditions[h.index("jetlen")] == ((2, 2), (6, 1))
    assert h.conditions[h.index("x")] == ()


def test_paths_and_active_dims():
    h = spaceshapes_like()
    assert h.num_paths == 4
    assert h.path_names == ("shape=moon", "shape=star", "shape=ship, jet=none", "shape=ship, jet=jet")
    assert h.active_dims(0) == ("x", "y", "shape", "phase")
    assert h.active_dims(3) == ("x", "y", "shape", "angle", "jet", "jetlen")
    assert [h.path_dim(p) for p in range(4)] == [3, 3, 3, 4]
    np.testing.assert_array_equal(h.path_choices[2], [-1, -1, 2, -1, -1, -1, 0, -1])


def test_min_downstream_dimensionality_and_signatures():
    h = spaceshapes_like()
    assert h.root.min_dim() == 3
    assert h.path_signatures == ((3, 3), (3, 3), (3, 3, 3), (3, 3, 4))
    # merge up: phase/shine/angle become one root dimension; push down: x, y per shape
    merged = Hierarchy(Group(("x", "y", "z"), Categorical("shape", (
        ("moon", Group()), ("star", Group()),
        ("ship", Group((), Categorical("jet", (("none", Group()), ("jet", Group(("jetlen",)))))))))))
    pushed = Hierarchy(Group((), Categorical("shape", (
        ("moon", Group(("x1", "y1", "phase"))), ("star", Group(("x2", "y2", "shine"))),
        ("ship", Group(("x3", "y3", "angle"), Categorical("jet", (("none", Group()), ("jet", Group(("jetlen",)))))))))))
    assert merged.path_signatures == h.path_signatures == pushed.path_signatures


def test_activity_mask_and_path_index_from_values():
    h = spaceshapes_like()
    values = np.array([
        [0.1, 0.2, 1, 0.5, 0, 0, 0, 0],
        [0.1, 0.2, 3, 0, 0, 0.3, 2, 0.9],
        [0.1, 0.2, 3, 0, 0, 0.3, 1, 0],
    ])
    np.testing.assert_array_equal(h.path_index(values), [0, 3, 2])
    mask = h.activity_mask(values)
    np.testing.assert_array_equal(mask[0], [1, 1, 1, 1, 0, 0, 0, 0])
    np.testing.assert_array_equal(mask[1], [1, 1, 1, 0, 0, 1, 1, 1])
    np.testing.assert_array_equal(h.activity_mask(values[2]), h.path_active[[2]])


@pytest.mark.parametrize("bad, message", [(4, "'shape' is 4,"), (1.5, "'shape' is 1.5"), (-1, "'shape' is -1,"),
                                          (0, "'shape' is 0, allowed are its option indices \\+ 1, 1..3 "
                                              "\\(0 means inactive")])
def test_bad_categorical_value_is_named(bad, message):
    h = spaceshapes_like()
    with pytest.raises(ValueError, match=message):
        h.path_index([[0, 0, bad, 0, 0, 0, 0, 0]])


def test_one_encoding_tells_inactive_from_the_first_option():
    """Factors and codes hold option index + 1 where a categorical is active and 0 where
    it is not; the true factors are a code of their own hierarchy."""
    h = spaceshapes_like()
    factors = np.array([
        [0.1, 0.2, 1, 0.5, 0, 0, 0, 0],  # moon
        [0.1, 0.2, 3, 0, 0, 0.3, 2, 0.9],  # ship with jet
        [0.1, 0.2, 3, 0, 0, 0.3, 1, 0],  # ship without jet
    ])
    np.testing.assert_array_equal(h.path_index(factors), [0, 3, 2])
    np.testing.assert_array_equal(h.activity_mask(factors), h.path_active[[0, 3, 2]])
    with pytest.raises(ValueError, match="'jet' is inactive on this path and must be 0, got 1"):
        h.path_index([[0, 0, 1, 0.5, 0, 0, 1, 0]])
    # inactive continuous values are not read
    np.testing.assert_array_equal(h.path_index([[0.1, 0.2, 1, 0.5, 7.0, 7.0, 0, 7.0]]), [0])


def test_wrong_width_is_rejected():
    with pytest.raises(ValueError, match=r"shape \(n, 8\)"):
        spaceshapes_like().activity_mask(np.zeros((2, 7)))


def test_json_round_trip_and_equality():
    h = spaceshapes_like()
    text = h.to_json()
    assert json.loads(text)["categorical"]["name"] == "shape"
    again = Hierarchy.from_json(text)
    assert again == h and hash(again) == hash(h)
    assert again.names == h.names and again.path_names == h.path_names
    with pytest.raises(ValueError, match="unknown hierarchy keys"):
        Hierarchy.from_dict({"continuous": ["a"], "children": []})


def test_reference_format_import_and_export():
    h = Hierarchy.from_reference(SPACESHAPES_REFERENCE)
    assert h.names == ("z0", "z1", "a0", "z2", "z3", "z4", "a1", "z5")
    assert h.to_reference() == SPACESHAPES_REFERENCE
    named = Hierarchy.from_reference(SPACESHAPES_REFERENCE, names=spaceshapes_like().names)
    assert named.names == spaceshapes_like().names
    assert named.path_signatures == spaceshapes_like().path_signatures
    with pytest.raises(ValueError, match="at most one categorical"):
        Hierarchy.from_reference([{"type": "categorical", "options": [[]]}] * 2)
    with pytest.raises(ValueError, match="'continuous' or 'categorical'"):
        Hierarchy.from_reference([{"type": "discrete"}])
    with pytest.raises(ValueError, match="names must list all 8"):
        Hierarchy.from_reference(SPACESHAPES_REFERENCE, names=["a"])


def test_text_tree():
    assert str(spaceshapes_like()) == "\n".join([
        "x, y",
        "shape",
        "├── moon: phase",
        "├── star: shine",
        "└── ship: angle",
        "    jet",
        "    ├── none: -",
        "    └── jet: jetlen",
    ])


def test_immutable_and_validated():
    h = spaceshapes_like()
    with pytest.raises(dataclasses.FrozenInstanceError):
        h.root.continuous = ("q",)
    with pytest.raises(ValueError, match="repeated: \\['x'\\]"):
        Hierarchy(Group(("x",), Categorical("c", (("a", Group(("x",))),))))
    with pytest.raises(ValueError, match="at least one option"):
        Categorical("c", ())
    with pytest.raises(ValueError, match="path must be in"):
        h.active_dims(4)
