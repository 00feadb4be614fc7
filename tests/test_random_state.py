"""One name for randomness (``random_state``), one converter, one integer check, and
one convention for every check: the value first."""
import inspect
import warnings

import numpy as np
import pytest

import hier_datasets
from hier_datasets.validation import check_non_negative_int, check_positive_int, check_random_state


def test_check_random_state_seeds_and_passes_generators_through():
    assert check_random_state(7).integers(1000, size=5).tolist() == np.random.default_rng(7).integers(
        1000, size=5).tolist()
    assert check_random_state(np.int64(7)).random() == np.random.default_rng(7).random()
    rng = np.random.default_rng(1)
    assert check_random_state(rng) is rng


@pytest.mark.parametrize("bad", [None, 1.5, "0", True, np.random.RandomState(0)])
def test_check_random_state_refuses_other_types_with_type_error(bad):
    with pytest.raises(TypeError, match=r"seed must be an integer seed >= 0 or a numpy Generator, got"):
        check_random_state(bad, "seed")


def test_check_random_state_refuses_negative_seeds():
    with pytest.raises(ValueError, match=r"random_state must be an integer seed >= 0 or a numpy Generator, got -3"):
        check_random_state(-3)


def test_one_integer_check_for_all_packages():
    import hier_metrics._validation

    assert hier_metrics._validation.check_positive_int is check_positive_int
    assert hier_metrics._validation.check_random_state is check_random_state
    assert check_positive_int(np.int32(3), "n") == 3 and type(check_positive_int(np.int32(3), "n")) is int
    assert check_non_negative_int(0, "n") == 0
    for bad, minimum in [(0, 1), (1, 2), (2.0, 1), (True, 1), ("3", 1)]:
        with pytest.raises(ValueError, match=rf"^n must be an integer >= {minimum}, got "):
            check_positive_int(bad, "n", minimum=minimum)


def test_every_check_takes_the_value_first():
    import hier_datasets.validation
    import hier_metrics._validation

    for module in (hier_datasets.validation, hier_metrics._validation):
        for name in dir(module):
            if name.startswith("check_"):
                first = next(iter(inspect.signature(getattr(module, name)).parameters))
                assert first != "name", f"{module.__name__}.{name} takes its name first"


def test_ground_truth_takes_random_state():
    gt = hier_datasets.ground_truth("chopsticks/depth2_either")
    factors, series = gt.sample(50, random_state=3)
    positional = gt.sample(50, 3)
    np.testing.assert_array_equal(factors, positional[0])
    with pytest.raises(TypeError, match="random_state"):
        gt.sample(5, random_state=None)


def test_a_generator_is_consumed_not_restarted():
    gt = hier_datasets.ground_truth("spaceshapes")
    rng = np.random.default_rng(0)
    first, second = gt.sample_factors(30, rng), gt.sample_factors(30, rng)
    assert not np.array_equal(first, second)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new keyword warns nothing
        np.testing.assert_array_equal(first, gt.sample_factors(30, random_state=np.random.default_rng(0)))
