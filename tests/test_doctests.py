"""The examples in the docstrings run as written.

Every module below holds ``Example:`` sections (Google style) for its public
functions; each runs here with :func:`doctest.testmod`, so an example that drifts
from the code fails the default test run.
"""
import doctest
import importlib

import pytest

MODULES = [
    "hier_datasets.hierarchy",
    "hier_datasets.validation",
    "hier_metrics.dci",
    "hier_metrics.evaluate",
    "hier_metrics.fairness",
    "hier_metrics.interventional",
    "hier_metrics.irs",
    "hier_metrics.lsbd",
    "hier_metrics.mig",
    "hier_metrics.modularity",
    "hier_metrics.paths",
    "hier_metrics.r4",
    "hier_metrics.sap",
    "hier_metrics.udr",
    "hier_metrics.unsupervised",
    "hier_models.ae",
    "hier_models.base",
    "hier_models.beta_tcvae",
    "hier_models.cofhae",
    "hier_models.factor_vae",
    "hier_models.ladders",
    "hier_models.vae",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS, verbose=False)
    assert result.attempted > 0, f"{name} has no examples"
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples of {name} failed (output above)"


def test_every_public_metric_has_a_google_style_docstring_with_an_example():
    import hier_metrics

    for name in ("r4", "r4c", "dci", "mig", "sap", "lsbd", "factor_vae_score", "beta_vae_score", "evaluate",
                 "evaluate_arrays", "purity", "coverage", "h_error"):
        doc = getattr(hier_metrics, name).__doc__
        missing = [section for section in ("Args:", "Returns:", "Raises:", "Example:") if section not in doc]
        assert not missing, f"hier_metrics.{name} lacks {missing}"
