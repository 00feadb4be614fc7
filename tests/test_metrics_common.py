"""hier_metrics: shared test data, input validation of every metric, determinism,
finite scores on constant codes, the rule for constant factors (left out, NaN per
factor, an error when all are constant), and import without TensorFlow.

The shared test data (warps, perfect codes, flat hierarchies) live in conftest.py.
"""
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import hier_metrics as hm
from conftest import perfect_codes, uniform_factors
from hier_datasets.hierarchy import Hierarchy

REPO = pathlib.Path(__file__).resolve().parents[1]

# ---------------------------------------------------------------- validation
F = uniform_factors(60, 3, seed=1)
Z = perfect_codes(F)


def _calls():
    """(name, call(factors, codes)) for every array metric."""
    h = Hierarchy.flat(3)
    return [
        ("r4", lambda f, z: hm.r4(f, z)),
        ("r4_matrix", lambda f, z: hm.r4_matrix(f, z)),
        ("r4c", lambda f, z: hm.r4c(f, z, factor_active=np.ones(np.shape(f), bool), code_hierarchy=h)),
        ("dci", lambda f, z: hm.dci(f, z)),
        ("dci_split", lambda f, z: hm.dci_split(f, z, groups={"a": [0], "b": [1, 2]})),
        ("importance_matrix", lambda f, z: hm.importance_matrix(f, z)),
        ("mig", lambda f, z: hm.mig(f, z)),
        ("sap", lambda f, z: hm.sap(f, z)),
        ("sap_matrix", lambda f, z: hm.sap_matrix(f, z)),
        ("evaluate_arrays", lambda f, z: hm.evaluate_arrays(f, z, metrics=["r4", "mig", "sap"])),
    ]


CALLS = _calls()
IDS = [name for name, _ in CALLS]


@pytest.mark.parametrize("call", [c for _, c in CALLS], ids=IDS)
def test_mismatched_rows_names_both_arguments(call):
    with pytest.raises(ValueError, match=r"factors has 60.*codes has 59|same number of rows"):
        call(F, Z[:-1])


@pytest.mark.parametrize("call", [c for _, c in CALLS], ids=IDS)
@pytest.mark.parametrize("which", ["factors", "codes"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_values_name_the_argument(call, which, bad):
    f, z = F.copy(), Z.copy()
    (f if which == "factors" else z)[5, 1] = bad
    with pytest.raises(ValueError, match=rf"{which} contains NaN or infinite"):
        call(f, z)


@pytest.mark.parametrize("call", [c for _, c in CALLS], ids=IDS)
def test_empty_single_sample_and_wrong_ndim(call):
    with pytest.raises(ValueError, match="factors is empty"):
        call(np.zeros((0, 3)), np.zeros((0, 3)))
    with pytest.raises(ValueError, match="codes is empty"):
        call(F, np.zeros((60, 0)))
    with pytest.raises(ValueError, match="factors needs at least"):
        call(F[:1], Z[:1])
    with pytest.raises(ValueError, match="factors must be a 2-D array"):
        call(F[:, 0], Z)
    with pytest.raises(ValueError, match="codes must be a 2-D array"):
        call(F, Z[None])
    with pytest.raises(ValueError, match="codes must be a numeric array"):
        call(F, [["a", "b", "c"]] * 60)
    # disentanglement_lib's (variables, examples) layout: named, not scored
    with pytest.raises(ValueError, match=r"factors has more columns \(60\) than rows \(3\).*transpose"):
        call(F.T, Z.T)


@pytest.mark.parametrize("name", ["r4", "dci", "sap", "evaluate_arrays"])
@pytest.mark.parametrize("bad, error", [(None, TypeError), (1.5, TypeError), ("0", TypeError), (True, TypeError),
                                        (-1, ValueError)])
def test_random_state_must_be_seed_or_generator(name, bad, error):
    fn = getattr(hm, name)
    with pytest.raises(error, match="random_state must be an integer seed >= 0 or a numpy Generator"):
        fn(F, Z, random_state=bad)


def test_generator_random_state_is_accepted_and_consumed():
    rng = np.random.default_rng(3)
    first = hm.r4(F, Z + 0.3 * np.sin(7 * F), random_state=rng)["per_factor"]
    second = hm.r4(F, Z + 0.3 * np.sin(7 * F), random_state=rng)["per_factor"]
    again = hm.r4(F, Z + 0.3 * np.sin(7 * F), random_state=np.random.default_rng(3))["per_factor"]
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, second)


@pytest.mark.parametrize("call", [c for _, c in CALLS], ids=IDS)
def test_same_call_gives_same_numbers(call):
    rng = np.random.default_rng(4)
    f = rng.normal(size=(80, 3))
    z = f @ rng.normal(size=(3, 3)) + 0.5 * rng.normal(size=(80, 3))
    a, b = call(f, z), call(f, z)

    def flat(d):
        return np.concatenate([np.ravel(np.asarray(v, dtype=float)) for v in _leaves(d)])

    np.testing.assert_array_equal(flat(a), flat(b))


def _leaves(value):
    if isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v)
    else:
        yield value


@pytest.mark.parametrize("call", [c for _, c in CALLS], ids=IDS)
def test_constant_codes_give_finite_scores(call):
    z = Z.copy()
    z[:, 2] = -1.0  # a constant code
    for codes in (z, np.zeros_like(Z)):
        values = np.concatenate([np.ravel(np.asarray(v, dtype=float)) for v in _leaves(call(F, codes))])
        assert np.all(np.isfinite(values))


# ------------------------------------------------------- constant factors
#: F with a constant factor inserted as column 1; dropping it gives F
F_CONST = np.column_stack([F[:, 0], np.full(len(F), 0.25), F[:, 1:]])
Z_CONST = np.column_stack([Z, F[:, 0] - F[:, 2]])


def _same(a, b):
    np.testing.assert_array_equal(np.asarray(a, dtype=float), np.asarray(b, dtype=float))


def test_a_constant_factor_is_left_out_of_r4_and_r4c():
    """The rule for constant factors: no information to recover, so left out of the
    mean and NaN per factor; every other number is unchanged (same random draws)."""
    with_c, without = hm.r4(F_CONST, Z_CONST), hm.r4(F, Z_CONST)
    assert with_c["score"] == without["score"]
    assert np.isnan(with_c["per_factor"][1])
    _same(np.delete(with_c["per_factor"], 1), without["per_factor"])
    matrix = hm.r4_matrix(F_CONST, Z_CONST)
    assert np.all(np.isnan(matrix[1]))
    _same(np.delete(matrix, 1, axis=0), hm.r4_matrix(F, Z_CONST))
    on = np.ones(F_CONST.shape, bool)
    with_c = hm.r4c(F_CONST, Z_CONST, factor_active=on)
    without = hm.r4c(F, Z_CONST, factor_active=on[:, 1:])
    assert with_c["score"] == without["score"] and np.isnan(with_c["per_factor"][1])
    _same(np.delete(with_c["per_factor"], 1), without["per_factor"])


def test_r4c_judges_constancy_on_the_active_rows():
    """Factor 1 varies, but only where it is inactive: on its active rows it is constant."""
    f = F_CONST.copy()
    active = np.ones(f.shape, bool)
    active[::2, 1] = False
    f[::2, 1] = np.linspace(-1, 1, f[::2].shape[0])
    res = hm.r4c(f, Z_CONST, factor_active=active)
    assert np.isnan(res["per_factor"][1])
    assert res["score"] == hm.r4c(F, Z_CONST, factor_active=np.ones(F.shape, bool))["score"]
    never = active.copy()
    never[:, 1] = False  # a factor that is never active has nothing to recover either
    assert np.isnan(hm.r4c(f, Z_CONST, factor_active=never)["per_factor"][1])


def test_a_constant_factor_is_left_out_of_dci():
    with_c, without = hm.dci(F_CONST, Z_CONST), hm.dci(F, Z_CONST)
    assert with_c == without
    imp = hm.importance_matrix(F_CONST, Z_CONST)
    assert np.all(imp["importance"][1] == 0)
    assert np.isnan(imp["informativeness_train"][1]) and np.isnan(imp["informativeness_test"][1])
    reference = hm.importance_matrix(F, Z_CONST)
    for key in reference:
        _same(np.delete(imp[key], 1, axis=0), reference[key])
    for assignment in ("all", "argmax"):  # a group of constant factors only scores NaN
        split = hm.dci_split(F_CONST, Z_CONST, groups={"a": [0, 2], "b": [3], "c": [1]}, code_assignment=assignment)
        assert all(np.isnan(v) for k, v in split["c"].items() if k != "codes")
    split = hm.dci_split(F_CONST, Z_CONST, groups={"a": [0, 1], "b": [2, 3]})
    expected = hm.dci_split(F, Z_CONST, groups={"a": [0], "b": [1, 2]})
    assert split == expected


def test_a_constant_factor_is_left_out_of_mig_and_sap():
    for fn in (hm.mig, hm.sap):
        assert fn(F_CONST, Z_CONST) == fn(F, Z_CONST)
    matrix = hm.sap_matrix(F_CONST, Z_CONST)
    assert np.all(np.isnan(matrix[1]))
    _same(np.delete(matrix, 1, axis=0), hm.sap_matrix(F, Z_CONST))
    # a categorical constant factor (SAP's classifier path) is left out too
    cat = np.column_stack([F_CONST, np.ones(len(F))])
    assert hm.sap(cat, Z_CONST, categorical=[4]) == hm.sap(F, Z_CONST)


@pytest.mark.parametrize("call", [c for _, c in CALLS], ids=IDS)
def test_every_factor_constant_is_an_error(call):
    for factors in (np.ones_like(F), np.column_stack([np.zeros(len(F)), np.full(len(F), 3.0), np.ones(len(F))])):
        with pytest.raises(ValueError, match="every column of factors is constant"):
            call(factors, Z)


def test_categorical_argument_is_checked():
    with pytest.raises(ValueError, match="marked categorical"):
        hm.r4(F, Z, categorical=[0])  # column 0 is continuous
    with pytest.raises(ValueError, match="one flag per column"):
        hm.mig(F, Z, categorical=np.array([True, False]))
    with pytest.raises(ValueError, match=r"indices must be in \[0, 3\)"):
        hm.sap(F, Z, categorical=[5])
    with pytest.raises(ValueError, match="categorical must be"):
        hm.dci(F, Z, categorical="yes")


def test_options_are_checked():
    with pytest.raises(ValueError, match="num_splits"):
        hm.r4(F, Z, num_splits=0)
    with pytest.raises(ValueError, match="test_size"):
        hm.r4(F, Z, test_size=1.0)
    with pytest.raises(ValueError, match="estimator"):
        hm.r4(F, Z, estimator="forest")
    with pytest.raises(ValueError, match="num_bins"):
        hm.mig(F, Z, num_bins=1)
    with pytest.raises(ValueError, match="discretization"):
        hm.mig(F, Z, discretization="kmeans")


def test_import_does_not_load_tensorflow():
    code = (
        "import sys\n"
        "import hier_metrics, hier_metrics.evaluate, hier_metrics.interventional\n"
        "assert 'tensorflow' not in sys.modules, 'tensorflow was imported'\n"
        "import numpy as np\n"
        "f = np.random.default_rng(0).normal(size=(50, 2))\n"
        "hier_metrics.evaluate_arrays(f, f, metrics=['r4', 'mig', 'sap'])\n"
        "hier_metrics.lsbd(np.random.default_rng(0).normal(size=(5, 6, 3)))\n"
        "assert 'tensorflow' not in sys.modules, 'tensorflow was imported by a metric'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO, capture_output=True)
