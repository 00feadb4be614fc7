"""The whole method: schedule, run selection, COFHAE on assignments, and (slow) end to end."""
import keras
import numpy as np
import pytest

import hier_datasets
from hier_models.cofhae import COFHAE, targets_from_assignments
from hier_models.hierarchical import (
    HierarchicalRun,
    fit_hierarchical,
    grid_label,
    select_run,
    successive_halving,
    train_cofhae,
)
from hier_models.selection import paper_rule, rule_ranking
from hier_models.training import ResumableFit, fit_paper_schedule, paper_learning_rate
from stopping import StopAtEpoch


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


def test_a_stopped_train_cofhae_resumes_to_the_unbroken_runs_weights(tmp_path):
    gt = hier_datasets.ground_truth("chopsticks/depth2_inter")
    factors, series = gt.sample(256, 0)
    options = dict(epochs=3, batch_size=64, hidden_units=(16,), discriminator_units=(16,), random_state=2)

    def train(**more):
        keras.utils.set_random_seed(2)
        return train_cofhae(series, gt.hierarchy, gt.paths(factors), **options, **more)

    whole = train()
    with pytest.raises(KeyboardInterrupt):
        train(resume=ResumableFit(tmp_path / "backup"), callbacks=[StopAtEpoch(2)])
    assert ResumableFit(tmp_path / "backup").epochs_done == 2
    resumed = train(resume=ResumableFit(tmp_path / "backup"))
    for a, b in zip(whole.model.get_weights(), resumed.model.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert resumed.history["loss"] == pytest.approx(whole.history["loss"], rel=1e-5), "all three epochs"
    assert resumed.reconstruction == pytest.approx(whole.reconstruction, rel=1e-5)
    assert not (tmp_path / "backup").exists()


def test_train_cofhae_trains_the_same_weights_whatever_ran_before():
    gt = hier_datasets.ground_truth("chopsticks/depth2_inter")
    factors, series = gt.sample(256, 0)

    def weights(global_seed, random_state=3):
        keras.utils.set_random_seed(global_seed)  # what an earlier model or draw would leave behind
        keras.random.normal((5,))
        run = train_cofhae(series, gt.hierarchy, gt.paths(factors), epochs=1, batch_size=64, hidden_units=(8,),
                           discriminator_units=(8,), random_state=random_state)
        return run.model.get_weights()

    first = weights(0)
    for a, b in zip(first, weights(99)):
        np.testing.assert_array_equal(a, b)
    assert not all(np.array_equal(a, b) for a, b in zip(first, weights(0, random_state=4))), "another seed, other weights"


def test_fit_hierarchical_gives_the_same_fit_whatever_ran_before():
    gt = hier_datasets.ground_truth("chopsticks/depth2_inter")
    _, series = gt.sample(2000, 0)

    def fit(global_seed):
        keras.utils.set_random_seed(global_seed)
        return fit_hierarchical(series, initial_dim=3, epochs=1, autoencoder_epochs=3, hidden_units=(16,),
                                cofhae_options={"discriminator_units": (8,)}, random_state=0)

    first, again = fit(0), fit(99)
    np.testing.assert_array_equal(first.initial_codes, again.initial_codes)
    np.testing.assert_array_equal(first.assignments, again.assignments)
    for a, b in zip(first.model.get_weights(), again.model.get_weights()):
        np.testing.assert_array_equal(a, b)


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
    series = np.zeros((64, 64), np.float32)
    with pytest.raises(ValueError, match="pass grid too"):
        fit_hierarchical(series, initial_dim=3, epochs=2, rungs=(1, 2))
    with pytest.raises(ValueError, match="the last rung must be the full training length, epochs=3"):
        fit_hierarchical(series, initial_dim=3, epochs=3, grid={"tau": (0.5, 1.0)}, rungs=(1, 2))


def test_fit_hierarchical_selects_by_successive_halving():
    gt = hier_datasets.ground_truth("chopsticks/depth2_inter")
    _, series = gt.sample(2000, 0)
    grid = {"lambda_assign": (10.0, 100.0, 1000.0)}
    fit = fit_hierarchical(series, initial_dim=3, epochs=2, autoencoder_epochs=3, grid=grid, rungs=(1, 2),
                           hidden_units=(16,), cofhae_options={"discriminator_units": (8,)}, random_state=0)
    assert [len(r.configurations) for r in fit.selection.rungs] == [3, 1]
    assert fit.run is fit.selection.run and fit.runs == [fit.run]
    assert fit.run.hyperparameters["lambda_assign"] == grid["lambda_assign"][fit.selection.choice]


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


def test_rule_ranking_and_paper_rule_by_hand():
    lx = [5.0, 1.0, 3.0, 0.5, 2.0, 4.0]
    la = [0.1, 0.9, 0.2, 0.8, 0.3, 0.7]
    # eligible third (n // 3 = 2): indices 0 and 2 (L_a 0.1, 0.2), by L_x: 2, 0; then the rest by L_x
    np.testing.assert_array_equal(rule_ranking(lx, la), [2, 0, 3, 1, 4, 5])
    assert paper_rule(lx, la) == 2
    # every configuration eligible: L_x alone decides
    np.testing.assert_array_equal(rule_ranking(lx, la, eligible=6), [3, 1, 4, 2, 5, 0])
    assert paper_rule([3.0], [1.0]) == 0
    with pytest.raises(ValueError, match="equal length"):
        rule_ranking([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="finite"):
        paper_rule([1.0, np.nan], [0.1, 0.2])
    with pytest.raises(ValueError, match="eligible must be at least 1"):
        rule_ranking(lx, la, eligible=0)


def test_successive_halving_keeps_the_rules_best_and_continues_them_exactly():
    gt = hier_datasets.ground_truth("chopsticks/depth2_inter")
    factors, series = gt.sample(256, 0)
    paths = gt.paths(factors)
    grid = {"lambda_assign": (1.0, 10.0, 100.0), "lambda_tc": (1.0, 10.0)}
    options = dict(batch_size=128, random_state=4, hidden_units=(8,), discriminator_units=(8,))
    labels = []
    result = successive_halving(series, gt.hierarchy, paths, grid=grid, rungs=(1, 3), keep=1 / 3,
                                callbacks=lambda label: labels.append(label) or [], **options)
    first, last = result.rungs
    assert (first.epochs, last.epochs) == (1, 3) and first.configurations == list(range(6))
    survivors = sorted(first.configurations[i] for i in rule_ranking(first.reconstruction, first.assignment)[:2])
    assert last.configurations == survivors, "the best third by the rule goes on"
    assert result.choice == survivors[int(np.argmin(last.reconstruction))], "both survivors eligible: lowest L_x"
    assert result.ranking()[0] == result.choice and sorted(result.ranking()) == list(range(6))
    assert len(labels) == 8 and labels[0] == "COFHAE lambda_assign=1 lambda_tc=1"
    # a survivor's training is exactly one 3-epoch run of the paper's schedule with the same seed
    point = result.points[result.choice]
    keras.utils.set_random_seed(4)
    alone = COFHAE((64,), gt.hierarchy, random_state=4, hidden_units=(8,), discriminator_units=(8,), **point)
    fit_paper_schedule(alone, series, targets_from_assignments(gt.hierarchy, paths), epochs=3, batch_size=128,
                       random_state=4)
    for a, b in zip(alone.get_weights(), result.model.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="rungs must be increasing"):
        successive_halving(series, gt.hierarchy, paths, grid=grid, rungs=(3, 3))
    with pytest.raises(ValueError, match="keep must be a fraction"):
        successive_halving(series, gt.hierarchy, paths, grid=grid, keep=1.0)


class _Stop(Exception):
    """Raised by :class:`_StopAtFit` to stop a selection midway."""


class _StopAtFit(keras.callbacks.Callback):
    """Raises :class:`_Stop` as the ``at``-th ``fit`` it is given to begins (1-based)."""

    def __init__(self, at):
        super().__init__()
        self.at, self.fits = at, 0

    def on_train_begin(self, logs=None):
        self.fits += 1
        if self.fits == self.at:
            raise _Stop


def test_successive_halving_resumes_from_its_checkpoint_as_if_never_stopped(tmp_path):
    gt = hier_datasets.ground_truth("chopsticks/depth2_inter")
    factors, series = gt.sample(256, 1)
    paths = gt.paths(factors)
    grid = {"lambda_assign": (1.0, 10.0, 100.0), "lambda_tc": (1.0, 10.0)}
    options = dict(grid=grid, rungs=(1, 2, 3), keep=1 / 3, batch_size=64, random_state=2, hidden_units=(8,),
                   discriminator_units=(8,))
    whole = successive_halving(series, gt.hierarchy, paths, **options)
    # stopped as the second of rung 2's two survivors starts: 6 + 1 fits have finished
    with pytest.raises(_Stop):
        successive_halving(series, gt.hierarchy, paths, checkpoint=tmp_path / "ck",
                           callbacks=[_StopAtFit(8)], **options)
    assert sorted(p.name for p in (tmp_path / "ck").glob("*.keras"))[0].endswith("-1.keras")
    labels = []
    resumed = successive_halving(series, gt.hierarchy, paths, checkpoint=tmp_path / "ck",
                                 callbacks=lambda label: labels.append(label) or [], **options)
    assert len(labels) == 2, "only the unfinished survivor of rung 2 and the last rung's one train again"
    assert resumed.choice == whole.choice
    for a, b in zip(whole.rungs, resumed.rungs):
        assert a.configurations == b.configurations
        np.testing.assert_allclose(a.reconstruction, b.reconstruction, rtol=1e-5)
        np.testing.assert_allclose(a.assignment, b.assignment, rtol=1e-5, atol=1e-9)
    for a, b in zip(whole.model.get_weights(), resumed.model.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert resumed.run.history["loss"] == pytest.approx(whole.run.history["loss"], rel=1e-5)
    # a finished selection resumes to its result without training
    again = successive_halving(series, gt.hierarchy, paths, checkpoint=tmp_path / "ck",
                               callbacks=[_StopAtFit(1)], **options)
    assert again.choice == whole.choice and again.rungs[-1].seconds == resumed.rungs[-1].seconds
    with pytest.raises(ValueError, match="holds another selection .*points"):
        successive_halving(series, gt.hierarchy, paths, checkpoint=tmp_path / "ck",
                           **{**options, "grid": {"lambda_assign": (1.0, 10.0, 100.0), "lambda_tc": (1.0,)}})
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="not empty and holds no halving.json"):
        successive_halving(series, gt.hierarchy, paths, checkpoint=tmp_path / "other", **options)


def test_a_selection_stopped_within_a_rung_resumes_at_the_epoch_it_was_on(tmp_path):
    gt = hier_datasets.ground_truth("chopsticks/depth2_inter")
    factors, series = gt.sample(256, 1)
    paths = gt.paths(factors)
    options = dict(grid={"lambda_assign": (1.0, 10.0, 100.0), "lambda_tc": (1.0, 10.0)}, rungs=(1, 3, 5), keep=1 / 3,
                   batch_size=64, random_state=3, hidden_units=(8,), discriminator_units=(8,))
    whole = successive_halving(series, gt.hierarchy, paths, **options)
    first, second = whole.rungs[1].configurations
    (last,) = whole.rungs[2].configurations
    assert last == first, "the stopped survivor goes on to the last rung with this seed"
    with pytest.raises(KeyboardInterrupt):  # as epoch 2 of the first survivor's second rung begins
        successive_halving(series, gt.hierarchy, paths, checkpoint=tmp_path / "ck", callbacks=[StopAtEpoch(2)],
                           **options)
    assert ResumableFit(tmp_path / "ck" / f"{first}-3.backup").epochs_done == 2
    begun = []

    def record(label):
        return [keras.callbacks.LambdaCallback(on_epoch_begin=lambda epoch, logs: begun.append((label, epoch)))]

    resumed = successive_halving(series, gt.hierarchy, paths, checkpoint=tmp_path / "ck", callbacks=record,
                                 **options)
    label = {i: f"COFHAE {grid_label(whole.points[i])}" for i in (first, second, last)}
    # the rest of the stopped fit, the other survivor's rung, then the last rung, each
    # from the epoch where it starts (a model that resumed once goes on from where it is)
    assert begun == [(label[first], 2), (label[second], 1), (label[second], 2), (label[last], 3), (label[last], 4)]
    assert resumed.choice == whole.choice
    for a, b in zip(whole.rungs[1:], resumed.rungs[1:]):
        np.testing.assert_allclose(a.reconstruction, b.reconstruction, rtol=1e-5)
    for a, b in zip(whole.model.get_weights(), resumed.model.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert resumed.run.history["loss"] == pytest.approx(whole.run.history["loss"], rel=1e-5), "all five epochs"
    assert not list((tmp_path / "ck").glob("*.backup")), "each backup goes once its rung's result is saved"
