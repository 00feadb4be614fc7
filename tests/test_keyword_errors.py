"""A misspelt keyword names the public function that the user called, not a helper."""
import importlib
import inspect

import numpy as np
import pytest

import hier_datasets
import hier_metrics
import hier_models

F = np.random.default_rng(0).random((60, 2))
HIERARCHY = hier_datasets.ground_truth("chopsticks/depth2_either").hierarchy

#: every public callable that takes ``**kwargs``, with arguments that are valid but for a misspelt keyword
CALLS = {
    "hier_datasets.ground_truth": lambda **kw: hier_datasets.ground_truth("chopsticks/depth2_either", **kw),
    "hier_metrics.r4": lambda **kw: hier_metrics.r4(F, F, **kw),
    "hier_metrics.dci": lambda **kw: hier_metrics.dci(F, F, **kw),
    "hier_metrics.dci_split": lambda **kw: hier_metrics.dci_split(F, F, groups={"a": [0], "b": [1]}, **kw),
    "hier_metrics.sap": lambda **kw: hier_metrics.sap(F, F, **kw),
    "hier_models.mimosa": lambda **kw: hier_models.mimosa(F, **kw),
    "hier_models.AE": lambda **kw: hier_models.AE((8,), **kw),
    "hier_models.Autoencoder": lambda **kw: hier_models.Autoencoder((8,), **kw),
    "hier_models.VAE": lambda **kw: hier_models.VAE((8,), **kw),
    "hier_models.BetaTCVAE": lambda **kw: hier_models.BetaTCVAE((8,), **kw),
    "hier_models.FactorVAE": lambda **kw: hier_models.FactorVAE((8,), **kw),
    "hier_models.ProVLAE": lambda **kw: hier_models.ProVLAE((64, 64, 1), **kw),
    "hier_models.ProLVAE": lambda **kw: hier_models.ProLVAE((64, 64, 1), **kw),
    "hier_models.COFHAE": lambda **kw: hier_models.COFHAE((64,), HIERARCHY, **kw),
}


def test_every_public_callable_with_kwargs_is_covered():
    found = set()
    for module in (hier_datasets, hier_metrics, hier_models):
        for name in module.__all__:
            obj = getattr(module, name)
            try:
                parameters = inspect.signature(obj).parameters.values()
            except (TypeError, ValueError):
                continue
            if callable(obj) and any(p.kind is p.VAR_KEYWORD for p in parameters):
                found.add(f"{module.__name__}.{name}")
    assert found == set(CALLS)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_misspelt_keyword_names_the_function_called(name):
    short = name.rsplit(".", 1)[1]
    with pytest.raises((TypeError, ValueError)) as caught:
        CALLS[name](random_stat=0)
    message = str(caught.value)
    assert "random_stat" in message
    assert message.startswith(f"{short}()") or f"passed to {short}" in message, message


@pytest.mark.parametrize("name, options", [
    ("hier_metrics.r4", "random_state, categorical, num_splits, test_size, estimator, num_bins"),
    ("hier_metrics.sap", "random_state, categorical, test_size, standardize"),
    ("hier_metrics.dci", "random_state, categorical, test_size, estimator, backend"),
    ("hier_datasets.ground_truth", "noise, min_offset, stopping"),
])
def test_the_error_lists_the_keywords_taken(name, options):
    with pytest.raises(TypeError, match=r"\(did you mean 'num_splits'\?\)" if "num_splits" in options else "num_split"):
        CALLS[name](num_split=3)
    with pytest.raises(TypeError, match=f"its options are {options}$"):
        CALLS[name](num_split=3)


def _public_functions_without_kwargs():
    for module in (hier_datasets, hier_metrics, hier_models):
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isfunction(obj) and f"{module.__name__}.{name}" not in CALLS:
                yield f"{module.__name__}.{name}", obj


@pytest.mark.parametrize("name, function", list(_public_functions_without_kwargs()))
def test_every_other_public_function_lists_its_keywords(name, function):
    """Every public function, today's and any added later: a misspelt keyword is named
    with the function, the closest keyword and every keyword it takes, before it runs."""
    taken = [p for p, v in inspect.signature(function).parameters.items()
             if v.kind in (v.POSITIONAL_OR_KEYWORD, v.KEYWORD_ONLY)]
    short = name.rsplit(".", 1)[1]
    with pytest.raises(TypeError) as caught:
        function(nonexistent_option=1)
    assert str(caught.value) == (f"{short}() got an unexpected keyword argument 'nonexistent_option'; "
                                 f"its options are {', '.join(taken)}")
    assert getattr(importlib.import_module(function.__module__), short) is function, "the module holds the same"
