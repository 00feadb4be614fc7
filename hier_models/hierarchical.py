"""The whole method of Ross & Doshi-Velez (2021): data -> smooth AE -> MIMOSA -> COFHAE.

- :func:`fit_hierarchical` runs it once: a Softplus autoencoder with ``initial_dim``
  codes trained on reconstruction (its smooth codes suit local SVD), MIMOSA on those
  codes, then COFHAE on the learned hierarchy with MIMOSA's assignments as targets;
- :func:`grid_search` trains COFHAE over the paper's grid (:data:`PAPER_GRID`, 27
  runs: tau in {0.5, 0.67, 1}, lambda_assign in {10, 100, 1000}, lambda_tc in
  {1, 10, 100}) and :func:`select_run` applies the paper's rule (section 6 and
  appendix A.1): among the third of runs with the lowest assignment loss, the lowest
  training reconstruction error. ``fit_hierarchical(..., grid=PAPER_GRID)`` runs the
  whole method with that selection;
- :func:`successive_halving` makes the same choice at a fifth of the cost: every
  configuration trains a few epochs, the best third by the rule goes on, and the
  last few train to the full length.

Without a grid, COFHAE trains once with its defaults ``tau=1, lambda_assign=100,
lambda_tc=10``: the single configuration of the authors' code (the default
arguments of its training function), in the middle of the paper's grid for both
penalties; one run costs 1/27 of the grid.

Training follows appendix A.1 (:func:`hier_models.training.fit_paper_schedule`):
Adam with learning rate 1e-3, divided by 10 at 50% and by 100 at 75% of the steps,
batch 256 (50 epochs in the paper).

Every function that trains takes ``strategy``: a ``tf.distribute`` strategy (e.g.
``tf.distribute.MirroredStrategy()``) whose scope the models are built in, so that
each global batch is split over its replicas (see :mod:`hier_models.distribute`);
None trains on one device.
"""
from __future__ import annotations

import dataclasses
import itertools
import math
import time
from typing import Mapping, Sequence

import keras
import numpy as np

from hier_datasets.hierarchy import Hierarchy
from hier_datasets.validation import check_seed
from hier_models._mimosa import mimosa
from hier_models.ae import AE
from hier_models.cofhae import COFHAE, targets_from_assignments
from hier_models.distribute import in_scope
from hier_models.halving_checkpoint import HalvingCheckpoint, digest
from hier_models.selection import paper_rule, rule_ranking
from hier_models.training import (
    STEPS_PER_EXECUTION,
    ResumableFit,
    advance_shuffling,
    fit_paper_schedule,
    input_scale,
    paper_learning_rate,
    training_dataset,
)

__all__ = [
    "PAPER_GRID", "HalvingRung", "HalvingSelection", "HierarchicalFit", "HierarchicalRun", "fit_hierarchical",
    "grid_label", "grid_points", "grid_search", "halving_rungs", "select_run", "successive_halving", "train_cofhae",
]

#: the paper's COFHAE grid (appendix A.1)
PAPER_GRID = {"tau": (0.5, 0.67, 1.0), "lambda_assign": (10.0, 100.0, 1000.0), "lambda_tc": (1.0, 10.0, 100.0)}


@dataclasses.dataclass
class HierarchicalRun:
    """One COFHAE run: the model, its hyperparameters and its final training losses."""

    model: COFHAE
    hyperparameters: dict
    assignment_loss: float
    reconstruction: float
    history: dict


@dataclasses.dataclass
class HierarchicalFit:
    """Everything :func:`fit_hierarchical` learned; ``runs`` holds every run of a grid
    search (``run`` is the selected one), or just ``run``."""

    smooth_autoencoder: AE
    initial_codes: np.ndarray
    hierarchy: Hierarchy
    assignments: np.ndarray
    run: HierarchicalRun
    runs: list = dataclasses.field(default_factory=list)
    selection: HalvingSelection | None = None

    @property
    def model(self) -> COFHAE:
        return self.run.model


def train_cofhae(
    observations,
    hierarchy: Hierarchy,
    assignments,
    *,
    epochs: int = 50,
    batch_size: int = 256,
    random_state: int = 0,
    verbose: int = 0,
    callbacks=None,
    scale: float | None = None,
    strategy=None,
    discriminator_optimizer=None,
    resume: ResumableFit | None = None,
    **cofhae_options,
) -> HierarchicalRun:
    """Train one COFHAE on ``assignments`` (path indices, -1 = discarded);
    ``callbacks`` go to ``fit``; ``discriminator_optimizer`` to ``compile`` (None: the
    model's default, Adam at the main learning rate and schedule); ``scale`` maps integer images to [0, 1] (see
    :func:`input_scale`); ``strategy``: a ``tf.distribute`` strategy or None;
    ``random_state`` (an integer seed or a numpy Generator) seeds the model's initial
    weights, its sampling noise and the shuffling, so the same call trains the same
    weights whatever ran before it (it calls ``keras.utils.set_random_seed``, which
    also reseeds Python's, NumPy's and TensorFlow's global generators). With
    ``resume`` (a :class:`~hier_models.training.ResumableFit`) a stopped call, made
    again with the same arguments, trains only the epochs left (see
    :func:`fit_paper_schedule`); the run's history then covers every epoch."""
    seed = check_seed(random_state)
    x = np.asarray(observations)
    input_scale(x, scale)
    targets = targets_from_assignments(hierarchy, assignments)
    if len(targets) != len(x):
        raise ValueError(f"assignments has {len(targets)} rows but observations has {len(x)}")
    keras.utils.set_random_seed(seed)  # the initial weights and the global half of the shuffling's seed
    with in_scope(strategy):
        model = COFHAE(x.shape[1:], hierarchy, random_state=seed, **cofhae_options)
    history = fit_paper_schedule(model, x, targets, epochs=epochs, batch_size=batch_size, random_state=seed,
                                 verbose=verbose, callbacks=callbacks, scale=scale, resume=resume,
                                 discriminator_optimizer=discriminator_optimizer).history
    if resume is not None:  # the epochs of every call, not only this one's
        history = resume.history
    return _scored_run(model, training_dataset(x, targets, batch_size, seed, shuffle=False, scale=scale), history)


def _scored_run(model: COFHAE, evaluation, history: dict) -> HierarchicalRun:
    """``model`` with its training losses, measured on the whole training set
    (``evaluation``, unshuffled) rather than averaged over an epoch of updates."""
    final = model.evaluate(evaluation, verbose=0, return_dict=True)
    keys = ("tau", "lambda_assign", "lambda_tc", "ablation")
    return HierarchicalRun(
        model=model,
        hyperparameters={k: getattr(model, k) for k in keys},
        assignment_loss=float(final["assignment"]),
        reconstruction=float(final["reconstruction"]),
        history=history,
    )


def _run_record(run: HierarchicalRun, seconds: float) -> dict:
    """``run`` without its model, and the seconds it took, as plain JSON values."""
    return {"hyperparameters": run.hyperparameters, "assignment_loss": float(run.assignment_loss),
            "reconstruction": float(run.reconstruction), "seconds": float(seconds),
            "history": {k: [float(v) for v in values] for k, values in run.history.items()}}


def select_run(runs: Sequence[HierarchicalRun]) -> HierarchicalRun:
    """The paper's rule (:func:`~hier_models.selection.paper_rule`): among the third of
    runs with the lowest assignment loss (at least one), the one with the lowest
    training reconstruction error."""
    if not runs:
        raise ValueError("select_run needs at least one run")
    return runs[paper_rule([r.reconstruction for r in runs], [r.assignment_loss for r in runs])]


def grid_points(grid: Mapping[str, Sequence] = PAPER_GRID) -> list[dict]:
    """Every combination of ``grid``'s values, in :func:`grid_search`'s order (the last
    name varies fastest), e.g. 27 dicts of tau, lambda_assign and lambda_tc for
    :data:`PAPER_GRID`."""
    if not isinstance(grid, Mapping) or not grid:
        raise ValueError(f"grid must be a non-empty mapping of COFHAE hyperparameters to values, got {grid!r}")
    names = list(grid)
    for name in names:
        values = grid[name]
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or len(values) == 0:
            raise ValueError(f"grid[{name!r}] must be a non-empty sequence of values, got {values!r}")
    return [dict(zip(names, values)) for values in itertools.product(*(grid[n] for n in names))]


def grid_label(point: Mapping) -> str:
    """``tau=0.5 lambda_assign=10 lambda_tc=1``: one grid point as text."""
    return " ".join(f"{k}={v:g}" if isinstance(v, (int, float)) else f"{k}={v}" for k, v in point.items())


def _stage_callbacks(callbacks, stage: str):
    """The callbacks of the ``fit`` called ``stage``: ``callbacks`` as given (a list, or
    None), or what a function of the stage's name returns for it."""
    return callbacks(stage) if callable(callbacks) else callbacks


def _checked_grid(grid, options: Mapping) -> list[dict]:
    """:func:`grid_points`, refusing options that the grid varies."""
    points = grid_points(grid)
    clash = sorted(set(grid) & set(options))
    if clash:
        raise ValueError(f"grid varies {', '.join(clash)}; do not also set {'it' if len(clash) == 1 else 'them'}")
    return points


def grid_search(
    observations,
    hierarchy: Hierarchy,
    assignments,
    *,
    grid: Mapping[str, Sequence] = PAPER_GRID,
    **train_options,
) -> tuple[HierarchicalRun, list[HierarchicalRun]]:
    """Train COFHAE at every point of ``grid`` (:func:`grid_points`), each with
    ``train_options`` (as :func:`train_cofhae`: each configuration starts from the
    same seed, as in :func:`successive_halving`); returns (:func:`select_run`'s
    choice, all runs in grid order)."""
    points = _checked_grid(grid, train_options)
    callbacks = train_options.pop("callbacks", None)
    runs = [train_cofhae(observations, hierarchy, assignments, **point, **train_options,
                         callbacks=_stage_callbacks(callbacks, f"COFHAE {grid_label(point)}")) for point in points]
    return select_run(runs), runs


@dataclasses.dataclass
class HalvingRung:
    """One rung of :func:`successive_halving`: the grid indices that trained up to
    ``epochs`` epochs (cumulative), their training losses there, and the seconds each
    spent in this rung."""

    epochs: int
    configurations: list
    reconstruction: list
    assignment: list
    seconds: list


@dataclasses.dataclass
class HalvingSelection:
    """What :func:`successive_halving` did: the grid's ``points``, each ``rung`` and the
    selected ``run`` (index ``choice`` in ``points``), trained to the last rung."""

    points: list
    rungs: list
    choice: int
    run: HierarchicalRun

    @property
    def model(self) -> COFHAE:
        return self.run.model

    def ranking(self) -> list[int]:
        """Grid indices best first: the last rung's order, then each earlier rung's
        configurations that stopped there, in that rung's order."""
        order, seen = [], set()
        for rung in reversed(self.rungs):
            ranked = rule_ranking(rung.reconstruction, rung.assignment, eligible=max(1, len(self.points) // 3))
            for i in ranked:
                if rung.configurations[i] not in seen:
                    seen.add(rung.configurations[i])
                    order.append(rung.configurations[i])
        return order


def halving_rungs(epochs: int) -> list[int]:
    """The rungs of :func:`successive_halving` for a run of ``epochs`` epochs: the
    paper-scale schedule (3, 10, 50) scaled to ``epochs`` (6% and 20% of it, at least
    one epoch each, the duplicates dropped)."""
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
        raise ValueError(f"epochs must be a positive integer, got {epochs!r}")
    return sorted({max(1, round(epochs * 3 / 50)), max(1, round(epochs * 10 / 50)), epochs})


def successive_halving(
    observations,
    hierarchy: Hierarchy,
    assignments,
    *,
    grid: Mapping[str, Sequence] = PAPER_GRID,
    rungs: Sequence[int] = (3, 10, 50),
    keep: float = 1 / 3,
    batch_size: int = 256,
    random_state: int = 0,
    callbacks=None,
    scale: float | None = None,
    strategy=None,
    discriminator_optimizer=None,
    checkpoint=None,
    **cofhae_options,
) -> HalvingSelection:
    """The paper's selection over ``grid`` at a fraction of the full grid's cost.

    Every configuration trains for ``rungs[0]`` epochs; the best ``keep`` of them by
    the paper's rule (:func:`~hier_models.selection.rule_ranking`, eligible = the
    lowest-``L_a`` third of the *whole* grid) go on to ``rungs[1]`` epochs, and so on;
    the last rung's survivors train to ``rungs[-1]`` epochs (the paper's 50) and the
    rule picks among them. With the paper's 27 configurations and the defaults:
    27 x 3 + 9 x 7 + 3 x 40 = 264 epochs instead of 27 x 50 = 1,350 (5.1x fewer).

    Fair rankings: a survivor continues where it stopped (same weights, optimiser
    state and data order), and every configuration follows the same learning-rate
    schedule, the paper's over ``rungs[-1]`` epochs (:func:`paper_learning_rate`:
    1e-3, /10 at 50%, /100 at 75%), so that at each rung all configurations are
    ranked after the same steps at the same learning rate, and a survivor's last
    rung is exactly a full paper run. Losses for the ranking are measured on the
    whole training set (``model.evaluate``), not averaged over the epoch's updates.
    Each configuration's weights start from ``keras.utils.set_random_seed(random_state)``,
    as a full grid of seeded runs would.

    Args:
      observations, hierarchy, assignments: as :func:`train_cofhae`.
      grid: COFHAE hyperparameters to values (:func:`grid_points`), default
        :data:`PAPER_GRID`.
      rungs: increasing cumulative epochs at which configurations are ranked; the last
        is the full training length.
      keep: fraction of configurations kept at each rung (at least one).
      callbacks: a list given to every ``fit``, or a function of the stage's name
        (e.g. ``"COFHAE tau=0.5 lambda_assign=10 lambda_tc=1"``) returning that list
        (one progress bar per configuration: ``FitProgress(...).named``).
      checkpoint: a folder (or None) where each configuration is saved as it
        finishes a rung (:class:`~hier_models.halving_checkpoint.HalvingCheckpoint`);
        calling again with the same arguments and folder resumes where a stopped
        call left off, retraining nothing that finished and selecting as an
        uninterrupted call would. A folder holding another selection is refused.
      batch_size, random_state, scale, strategy, discriminator_optimizer,
        **cofhae_options: as :func:`train_cofhae`.

    Returns:
      a :class:`HalvingSelection`.
    """
    seed = check_seed(random_state)
    points = _checked_grid(grid, cofhae_options)
    rungs = [int(r) for r in rungs]
    if not rungs or rungs[0] < 1 or any(b <= a for a, b in zip(rungs, rungs[1:])):
        raise ValueError(f"rungs must be increasing positive epoch counts, got {rungs}")
    if not 0 < keep < 1:
        raise ValueError(f"keep must be a fraction in (0, 1), got {keep}")
    x = np.asarray(observations)
    input_scale(x, scale)
    targets = targets_from_assignments(hierarchy, assignments)
    if len(targets) != len(x):
        raise ValueError(f"assignments has {len(targets)} rows but observations has {len(x)}")
    total_steps = math.ceil(len(x) / batch_size) * rungs[-1]
    evaluation = training_dataset(x, targets, batch_size, seed, shuffle=False, scale=scale)
    eligible = max(1, len(points) // 3)
    store = None if checkpoint is None else HalvingCheckpoint(checkpoint, {
        "points": points, "rungs": rungs, "keep": keep, "batch_size": batch_size, "random_state": seed,
        "scale": scale, "options": cofhae_options, "hierarchy": hierarchy.to_json(), "data": digest(x, targets),
        "discriminator_optimizer": None if discriminator_optimizer is None else discriminator_optimizer.get_config(),
    })

    def resumable(i: int, done: int, backed_up: int):
        """Configuration ``i`` as it finished ``done`` epochs (new if 0), and its shuffled
        data advanced to epoch ``backed_up`` (where a stopped fit's backup resumes)."""
        keras.utils.set_random_seed(seed)  # also the global half of the shuffling's seed
        data = advance_shuffling(training_dataset(x, targets, batch_size, seed, scale=scale), backed_up)
        if done:  # only a checkpoint's survivors reach here without a model in memory
            return store.load(done, i, strategy), data
        with in_scope(strategy):
            model = COFHAE(x.shape[1:], hierarchy, random_state=seed, **points[i], **cofhae_options)
            optimizer = keras.optimizers.Adam(paper_learning_rate(total_steps))
        # each model its own copy of a given discriminator optimiser
        own = None if discriminator_optimizer is None else type(discriminator_optimizer).from_config(
            discriminator_optimizer.get_config())
        model.compile(optimizer=optimizer, discriminator_optimizer=own, steps_per_execution=STEPS_PER_EXECUTION)
        return model, data

    models, datasets, histories = {}, {}, {}
    alive, done, history = list(range(len(points))), 0, []
    for end in rungs:
        runs, seconds = [], []
        for i in alive:
            saved = None if store is None else store.result(end, i)
            if saved is None:
                # kept until the rung's result is saved, so no stop loses the finished fit
                backup = None if store is None else ResumableFit(store.backup_folder(end, i), remove_when_done=False)
                if i not in models:
                    models[i], datasets[i] = resumable(i, done, max(done, backup.epochs_done if backup else 0))
                stage = _stage_callbacks(callbacks, f"COFHAE {grid_label(points[i])}")
                started = time.perf_counter()
                fit = models[i].fit(datasets[i], initial_epoch=done, epochs=end, verbose=0,
                                    callbacks=[backup, *stage] if backup else stage)
                earlier = histories.get(i, {})  # the rungs before, in this call or a stopped one
                this_rung = backup.history if backup else fit.history  # every chunk of the rung
                run = _scored_run(models[i], evaluation, {k: list(earlier.get(k, [])) + v for k, v in this_rung.items()})
                seconds.append(backup.seconds if backup else time.perf_counter() - started)
                if store is not None:
                    store.save(end, i, models[i], _run_record(run, seconds[-1]), previous=done)
                    backup.discard()
            else:
                run = HierarchicalRun(model=None, **{k: v for k, v in saved.items() if k != "seconds"})
                seconds.append(saved["seconds"])
            runs.append(run)
            histories[i] = run.history
        history.append(HalvingRung(end, list(alive), [r.reconstruction for r in runs],
                                   [r.assignment_loss for r in runs], seconds))
        ranked = rule_ranking(history[-1].reconstruction, history[-1].assignment, eligible=eligible)
        if end == rungs[-1]:
            best = runs[ranked[0]]
            if best.model is None:
                best = dataclasses.replace(best, model=store.load(end, alive[ranked[0]], strategy))
            return HalvingSelection(points, history, alive[ranked[0]], best)
        alive = sorted(alive[j] for j in ranked[: max(1, math.ceil(round(len(alive) * keep, 6)))])
        for i in list(models):
            if i not in alive:
                del models[i], datasets[i]
        done = end


def fit_hierarchical(
    observations,
    *,
    initial_dim: int,
    epochs: int = 50,
    autoencoder_epochs: int | None = None,
    batch_size: int = 256,
    random_state: int = 0,
    mimosa_options: Mapping | None = None,
    cofhae_options: Mapping | None = None,
    architecture: str | None = None,
    hidden_units=None,
    verbose: int = 0,
    callbacks=None,
    grid: Mapping[str, Sequence] | None = None,
    rungs: Sequence[int] | None = None,
    checkpoint=None,
    scale: float | None = None,
    strategy=None,
) -> HierarchicalFit:
    """Data -> Softplus AE (``initial_dim`` codes) -> MIMOSA -> COFHAE, in one call.

    With ``grid`` (e.g. :data:`PAPER_GRID`), COFHAE is trained at every grid point and
    the paper's rule (:func:`select_run`) picks the returned ``run``; with ``rungs``
    too (e.g. ``(3, 10, 50)``, the last equal to ``epochs``) the grid is run as
    :func:`successive_halving` (``selection`` holds its rungs; ``checkpoint``, a
    folder, makes it resumable: see there); otherwise COFHAE is
    trained once with ``cofhae_options``. ``callbacks`` (a list, or a function of a
    stage's name returning one) go to every ``fit`` call (the
    autoencoder's, then each COFHAE run's). ``scale`` maps integer images to [0, 1]
    (see :func:`input_scale`: 1 for Spaceshapes' 0/1 pixels as stored); float
    observations need none. ``strategy`` (a ``tf.distribute`` strategy, or None)
    trains the autoencoder and every COFHAE run on its replicas, ``batch_size``
    rows per global batch. ``random_state`` (an integer seed or a numpy Generator)
    seeds every model (initial weights and sampling noise) and the shuffling, so the
    same call gives the same fit (``keras.utils.set_random_seed`` before the
    autoencoder and before each COFHAE run)."""
    seed = check_seed(random_state)
    x = np.asarray(observations)
    if x.ndim < 2 or len(x) == 0:
        raise ValueError(f"observations must be a non-empty array of shape (n, ...), got {x.shape}")
    input_scale(x, scale)  # before anything trains
    if grid is not None:
        _checked_grid(grid, cofhae_options or {})  # before anything trains
    if rungs is not None:
        if grid is None:
            raise ValueError("rungs schedule a grid's selection (successive halving); pass grid too")
        if list(rungs)[-1:] != [epochs]:
            raise ValueError(f"the last rung must be the full training length, epochs={epochs}; got rungs {list(rungs)}")
    elif checkpoint is not None:
        raise ValueError("checkpoint resumes a successive-halving selection; pass grid and rungs too")
    ae_epochs = epochs if autoencoder_epochs is None else autoencoder_epochs
    arch = dict(architecture=architecture, hidden_units=hidden_units)
    keras.utils.set_random_seed(seed)  # the autoencoder's initial weights
    with in_scope(strategy):
        ae = AE(x.shape[1:], latent_dim=initial_dim, activation="softplus", random_state=seed, **arch)
    fit_paper_schedule(ae, x, epochs=ae_epochs, batch_size=batch_size, random_state=seed, verbose=verbose,
                       callbacks=_stage_callbacks(callbacks, "smooth autoencoder"), scale=scale)
    codes = ae.encode(training_dataset(x, None, batch_size, seed, shuffle=False, scale=scale))
    hierarchy, assignments = mimosa(codes, **dict(mimosa_options or {}))
    options = dict(epochs=epochs, batch_size=batch_size, random_state=seed, verbose=verbose, callbacks=callbacks, scale=scale,
                   strategy=strategy, **arch, **dict(cofhae_options or {}))
    if grid is None:
        run = train_cofhae(x, hierarchy, assignments, **{**options, "callbacks": _stage_callbacks(callbacks, "COFHAE")})
        return HierarchicalFit(ae, codes, hierarchy, assignments, run, [run])
    if rungs is not None:
        del options["epochs"], options["verbose"]
        selection = successive_halving(x, hierarchy, assignments, grid=grid, rungs=rungs, checkpoint=checkpoint,
                                       **options)
        return HierarchicalFit(ae, codes, hierarchy, assignments, selection.run, [selection.run], selection)
    run, runs = grid_search(x, hierarchy, assignments, grid=grid, **options)
    return HierarchicalFit(ae, codes, hierarchy, assignments, run, runs)
