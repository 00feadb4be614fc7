"""hier_models.recipes.score: which metrics a representation gets, by dataset and
code kind, all computed by hier_metrics; the report's per-path purity."""
import numpy as np
import pytest

import hier_datasets
import hier_metrics
from hier_datasets.hierarchy import Hierarchy
from hier_models import recipes
from hier_models.splits import SplitArrays
from hierbench.figures import path_purity


def _split(name: str, n: int = 600) -> SplitArrays:
    gt = hier_datasets.ground_truth(name, **({"workers": 0} if name.startswith("boxhead") else {}))
    factors = gt.sample_factors(n, 0).astype(np.float64)
    return SplitArrays(name, "test", np.zeros((n, 1)), factors, gt.active(factors), gt.paths(factors),
                                gt.hierarchy)


def test_boxhead_gets_the_macro_and_micro_dci_the_authors_way():
    data = _split("boxhead/boxhead2")
    codes = data.factors + 0.01 * np.random.default_rng(0).normal(size=data.factors.shape)
    out = recipes.score(data, codes, show_progress=False)
    for level in ("macro", "micro"):
        for part in ("disentanglement", "completeness"):
            assert 0.85 <= out[f"dci_{level}_{part}"] <= 1.0, (level, part)
    assert "h_error" not in out and "purity" not in out  # flat codes


def test_hierarchy_metrics_only_for_hierarchical_codes():
    data = _split("chopsticks/depth2_either")
    flat = recipes.score(data, data.factors, show_progress=False)
    assert "h_error" not in flat and "purity" not in flat and "dci_macro_disentanglement" not in flat
    h = data.hierarchy
    ours = recipes.score(data, data.factors, hierarchy=h, show_progress=False)
    assert ours["h_error"] == 0 and ours["purity"] == 1.0


def test_score_is_evaluate_arrays_on_the_split():
    """The array metrics are hier_metrics.evaluate_arrays' own numbers, seeded the same."""
    data = _split("chopsticks/depth2_either", 400)
    codes = data.factors + 0.05 * np.random.default_rng(1).normal(size=data.factors.shape)
    out = recipes.score(data, codes, random_state=3, show_progress=False)
    direct = hier_metrics.evaluate_arrays(
        data.factors, codes, factor_active=data.active, code_hierarchy=Hierarchy.flat(codes.shape[1]),
        categorical=data.hierarchy, metrics=list(recipes.ARRAY_METRICS), random_state=3,
    )
    assert set(direct) <= set(out)
    for key, value in direct.items():
        assert out[key] == value, key


def test_interventional_scores_with_a_representation():
    data = _split("chopsticks/depth2_either", 300)
    h = data.hierarchy

    def representation(series):
        return np.asarray(series, np.float64)[:, ::8]  # 8 of the 64 points of each series

    out = recipes.score(data, data.factors, hierarchy=h, representation=representation,
                        interventional_points=40, show_progress=False)
    for key in ("factor_vae_train_accuracy", "factor_vae_eval_accuracy", "beta_vae_train_accuracy", "beta_vae_eval_accuracy"):
        assert 0.0 <= out[key] <= 1.0, key
    assert "dataset" not in out and "num_samples" not in out
    skipped = recipes.score(data, data.factors, representation=representation, interventional_points=0, show_progress=False)
    assert not any(k.startswith(("factor_vae", "beta_vae")) for k in skipped)
    with pytest.raises(TypeError, match="representation must be a function"):
        recipes.score(data, data.factors, representation="encoder", show_progress=False)


def test_evaluate_arrays_reports_progress_metric_by_metric():
    rng = np.random.default_rng(0)
    factors = rng.uniform(-1, 1, size=(200, 3))
    seen = []
    hier_metrics.evaluate_arrays(factors, factors ** 3, metrics=["sap", "r4", "mig"], progress=seen.append)
    assert seen == ["r4", "mig", "sap"]  # in the order they run
    with pytest.raises(TypeError, match="progress must be a callable"):
        hier_metrics.evaluate_arrays(factors, factors, metrics=["r4"], progress="bar")


def test_path_purity_per_learned_path():
    true = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2, 0])
    pred = np.array([0, 0, 1, 1, 1, 2, 2, 2, -1, -1])
    purity, counts, majority = path_purity(true, pred, 4)
    np.testing.assert_allclose(purity, [1.0, 2 / 3, 1.0, 0.0])
    np.testing.assert_array_equal(counts, [2, 3, 3, 0])
    np.testing.assert_array_equal(majority, [0, 1, 2, -1])
    # the count-weighted mean is hier_metrics' overall purity
    assert np.dot(purity, counts) / counts.sum() == pytest.approx(hier_metrics.purity(true, pred))
    with pytest.raises(ValueError, match="1-D of one length"):
        path_purity(true, pred[:-1], 4)
