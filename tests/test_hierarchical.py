"""The whole method: schedule, run selection, COFHAE on assignments, and (slow) end to end."""
import keras
import numpy as np
import pytest

import hier_datasets
from hier_models.hierarchical import HierarchicalRun, fit_hierarchical, select_run, train_cofhae
from hier_models.training import paper_learning_rate


def test_paper_learning_rate_steps_down_at_half_and_three_quarters():
    lr = paper_learning_rate(1000)
    values = [float(lr(s)) for s in (0, 499, 501, 749, 751, 999)]
    np.testing.assert_allclose(values, [1e-3, 1e-3, 1e-4, 1e-4, 1e-5, 1e-5], rtol=1e-6)


def _run(assignment, reconstruction):
    return HierarchicalRun(model=None, hyperparameters={}, assignment_loss=assignment, reconstruction=reconstruction, history={})


def test_select_run_is_the_papers_rule():
    runs = [_run(a, r) for a, r in [(0.1, 9.0), (0.2, 5.0), (0.3, 1.0), (0.9, 0.1), (0.8, 0.2), (0.7, 0.3)]]
    # best third by assignment loss: the first two; of those the lower reconstruction
    assert select_run(runs) is runs[1]
    assert select_run(runs[:2]) is runs[0], "a third of two runs is still one run"
    with pytest.raises(ValueError, match="at least one run"):
        select_run([])


def test_train_cofhae_on_true_assignments():
    gt = hier_datasets.ground_truth("chopsticks/depth2_inter")
    factors, series = gt.sample(512, 0)
    run = train_cofhae(series, gt.hierarchy, gt.paths(factors), epochs=3, batch_size=64, hidden_units=(32,),
                       discriminator_units=(32,), lambda_assign=100.0)
    assert run.hyperparameters["lambda_assign"] == 100.0 and run.hyperparameters["ablation"] == "H+A+TC(Z|on)"
    assert np.isfinite(run.assignment_loss) and np.isfinite(run.reconstruction)
    assert run.history["loss"][-1] < run.history["loss"][0]
    with pytest.raises(ValueError, match="assignments has 3 rows but observations has 512"):
        train_cofhae(series, gt.hierarchy, [0, 1, 1], epochs=1)


def test_train_cofhae_takes_a_discriminator_optimizer():
    """Default: Adam at the main schedule (1e-3 at the start); given: that optimiser."""
    gt = hier_datasets.ground_truth("chopsticks/depth2_inter")
    factors, series = gt.sample(128, 0)
    options = dict(epochs=1, batch_size=64, hidden_units=(8,), discriminator_units=(8,))
    default = train_cofhae(series, gt.hierarchy, gt.paths(factors), **options).model.discriminator_optimizer
    assert float(default.learning_rate) == pytest.approx(1e-3) and float(default.beta_1) == pytest.approx(0.9)
    given = keras.optimizers.Adam(1e-4, beta_1=0.5, beta_2=0.9)
    model = train_cofhae(series, gt.hierarchy, gt.paths(factors), discriminator_optimizer=given, **options).model
    assert model.discriminator_optimizer is given and int(given.iterations) == 2


def test_fit_hierarchical_rejects_bad_observations():
    with pytest.raises(ValueError, match="observations must be a non-empty array"):
        fit_hierarchical(np.zeros((0, 64)), initial_dim=3)


@pytest.mark.slow
def test_whole_method_on_depth2_chopsticks():
    from hier_metrics import coverage, h_error, purity, r4c

    gt = hier_datasets.ground_truth("chopsticks/depth2_inter")
    factors, series = gt.sample(20_000, 0)
    fit = fit_hierarchical(series, initial_dim=3, epochs=20, random_state=0)
    assert h_error(fit.hierarchy, gt.hierarchy) == 0
    assert coverage(fit.assignments) >= 0.8
    assert purity(gt.paths(factors), fit.assignments) >= 0.9
    test_factors, test_series = gt.sample(4000, 1)
    score = r4c(test_factors, fit.model.encode(test_series), factor_active=gt.active(test_factors),
                code_hierarchy=fit.hierarchy)["score"]
    assert score >= 0.7


@pytest.mark.slow
def test_whole_method_recovers_depth3_chopsticks_at_half_the_papers_size():
    """depth-3 `inter` from 45,000 series: the smooth autoencoder for the paper's 50
    epochs, MIMOSA with its defaults, COFHAE briefly (10 epochs)."""
    from hier_metrics import coverage, h_error, purity, r4c

    gt = hier_datasets.ground_truth("chopsticks/depth3_inter")
    factors, series = gt.sample(45_000, 0)
    fit = fit_hierarchical(series, initial_dim=4, autoencoder_epochs=50, epochs=10, random_state=0)
    assert h_error(fit.hierarchy, gt.hierarchy) == 0
    assert purity(gt.paths(factors), fit.assignments) >= 0.95
    assert coverage(fit.assignments) >= 0.9
    test_factors, test_series = gt.sample(5000, 1)
    score = r4c(test_factors, fit.model.encode(test_series), factor_active=gt.active(test_factors),
                code_hierarchy=fit.hierarchy)["score"]
    assert score >= 0.8
