"""hier_models.runs.score: which metrics a representation gets, by dataset and code kind."""
import numpy as np

import hier_datasets
from hier_models import runs


def _split(name: str, n: int = 600) -> runs.Split:
    dataset = runs.resolve_dataset(name)
    gt = hier_datasets.ground_truth(name, **({"workers": 0} if name.startswith("boxhead") else {}))
    factors = gt.sample_factors(n, 0).astype(np.float64)
    return runs.Split(dataset, "test", np.zeros((n, 1)), factors, gt.active(factors), gt.paths(factors), gt.hierarchy)


def test_boxhead_gets_the_macro_and_micro_dci_the_authors_way():
    data = _split("boxhead/boxhead2")
    codes = data.factors + 0.01 * np.random.default_rng(0).normal(size=data.factors.shape)
    out = runs.score(data, codes, show_progress=False)
    for level in ("macro", "micro"):
        for part in ("disentanglement", "completeness"):
            assert 0.85 <= out[f"dci_{level}_{part}"] <= 1.0, (level, part)
    assert "h_error" not in out and "purity" not in out  # flat codes


def test_hierarchy_metrics_only_for_hierarchical_codes():
    data = _split("chopsticks/depth2_either")
    flat = runs.score(data, data.factors, show_progress=False)
    assert "h_error" not in flat and "purity" not in flat and "dci_macro_disentanglement" not in flat
    h = data.hierarchy
    ours = runs.score(data, h.codes_from_factors(data.factors), hierarchy=h, show_progress=False)
    assert ours["h_error"] == 0 and ours["purity"] == 1.0
