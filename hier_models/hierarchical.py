"""The whole method of Ross & Doshi-Velez (2021): data -> smooth AE -> MIMOSA -> COFHAE.

- :func:`fit_hierarchical` runs it once: a Softplus autoencoder with ``initial_dim``
  codes trained on reconstruction (its smooth codes suit local SVD), MIMOSA on those
  codes, then COFHAE on the learned hierarchy with MIMOSA's assignments as targets;
- :func:`grid_search` trains COFHAE over the paper's grid (:data:`PAPER_GRID`, 27
  runs: tau in {0.5, 0.67, 1}, lambda_assign in {10, 100, 1000}, lambda_tc in
  {1, 10, 100}) and :func:`select_run` applies the paper's rule (section 6 and
  appendix A.1): among the third of runs with the lowest assignment loss, the lowest
  training reconstruction error. ``fit_hierarchical(..., grid=PAPER_GRID)`` runs the
  whole method with that selection.

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
from typing import Mapping, Sequence

import numpy as np

from hier_datasets.hierarchy import Hierarchy
from hier_datasets.validation import check_seed
from hier_models._mimosa import mimosa
from hier_models.ae import AE
from hier_models.cofhae import COFHAE, targets_from_assignments
from hier_models.distribute import in_scope
from hier_models.training import fit_paper_schedule, input_scale, training_dataset

__all__ = [
    "PAPER_GRID", "HierarchicalFit", "HierarchicalRun", "fit_hierarchical", "grid_points", "grid_search", "select_run",
    "train_cofhae",
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
    **cofhae_options,
) -> HierarchicalRun:
    """Train one COFHAE on ``assignments`` (path indices, -1 = discarded);
    ``callbacks`` go to ``fit``; ``discriminator_optimizer`` to ``compile`` (None: the
    model's default, Adam at the main learning rate and schedule); ``scale`` maps integer images to [0, 1] (see
    :func:`input_scale`); ``strategy``: a ``tf.distribute`` strategy or None;
    ``random_state`` (an integer seed or a numpy Generator; ``seed`` is its deprecated
    name) seeds the model and the shuffling."""
    seed = check_seed(random_state)
    x = np.asarray(observations)
    input_scale(x, scale)
    targets = targets_from_assignments(hierarchy, assignments)
    if len(targets) != len(x):
        raise ValueError(f"assignments has {len(targets)} rows but observations has {len(x)}")
    with in_scope(strategy):
        model = COFHAE(x.shape[1:], hierarchy, random_state=seed, **cofhae_options)
    history = fit_paper_schedule(model, x, targets, epochs=epochs, batch_size=batch_size, random_state=seed,
                                 verbose=verbose, callbacks=callbacks, scale=scale,
                                 discriminator_optimizer=discriminator_optimizer).history
    evaluation = training_dataset(x, targets, batch_size, seed, shuffle=False, scale=scale)
    final = model.evaluate(evaluation, verbose=0, return_dict=True)
    keys = ("tau", "lambda_assign", "lambda_tc", "ablation")
    return HierarchicalRun(
        model=model,
        hyperparameters={k: getattr(model, k) for k in keys},
        assignment_loss=float(final["assignment"]),
        reconstruction=float(final["reconstruction"]),
        history=history,
    )


def select_run(runs: Sequence[HierarchicalRun]) -> HierarchicalRun:
    """The paper's rule: among the third of runs with the lowest assignment loss
    (at least one), the one with the lowest training reconstruction error."""
    if not runs:
        raise ValueError("select_run needs at least one run")
    by_assignment = sorted(runs, key=lambda r: r.assignment_loss)
    best_third = by_assignment[: max(1, len(runs) // 3)]
    return min(best_third, key=lambda r: r.reconstruction)


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
    ``train_options`` (as :func:`train_cofhae`); returns (:func:`select_run`'s
    choice, all runs in grid order)."""
    points = _checked_grid(grid, train_options)
    runs = [train_cofhae(observations, hierarchy, assignments, **point, **train_options) for point in points]
    return select_run(runs), runs


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
    scale: float | None = None,
    strategy=None,
) -> HierarchicalFit:
    """Data -> Softplus AE (``initial_dim`` codes) -> MIMOSA -> COFHAE, in one call.

    With ``grid`` (e.g. :data:`PAPER_GRID`), COFHAE is trained at every grid point and
    the paper's rule (:func:`select_run`) picks the returned ``run``; otherwise it is
    trained once with ``cofhae_options``. ``callbacks`` go to every ``fit`` call (the
    autoencoder's, then each COFHAE run's). ``scale`` maps integer images to [0, 1]
    (see :func:`input_scale`: 1 for Spaceshapes' 0/1 pixels as stored); float
    observations need none. ``strategy`` (a ``tf.distribute`` strategy, or None)
    trains the autoencoder and every COFHAE run on its replicas, ``batch_size``
    rows per global batch. ``random_state`` (an integer seed or a numpy Generator)
    seeds every model and the shuffling."""
    seed = check_seed(random_state)
    x = np.asarray(observations)
    if x.ndim < 2 or len(x) == 0:
        raise ValueError(f"observations must be a non-empty array of shape (n, ...), got {x.shape}")
    input_scale(x, scale)  # before anything trains
    if grid is not None:
        _checked_grid(grid, cofhae_options or {})  # before anything trains
    ae_epochs = epochs if autoencoder_epochs is None else autoencoder_epochs
    arch = dict(architecture=architecture, hidden_units=hidden_units)
    with in_scope(strategy):
        ae = AE(x.shape[1:], latent_dim=initial_dim, activation="softplus", random_state=seed, **arch)
    fit_paper_schedule(ae, x, epochs=ae_epochs, batch_size=batch_size, random_state=seed, verbose=verbose,
                       callbacks=callbacks, scale=scale)
    codes = ae.encode(training_dataset(x, None, batch_size, seed, shuffle=False, scale=scale))
    hierarchy, assignments = mimosa(codes, **dict(mimosa_options or {}))
    options = dict(epochs=epochs, batch_size=batch_size, random_state=seed, verbose=verbose, callbacks=callbacks, scale=scale,
                   strategy=strategy, **arch, **dict(cofhae_options or {}))
    if grid is None:
        run = train_cofhae(x, hierarchy, assignments, **options)
        return HierarchicalFit(ae, codes, hierarchy, assignments, run, [run])
    run, runs = grid_search(x, hierarchy, assignments, grid=grid, **options)
    return HierarchicalFit(ae, codes, hierarchy, assignments, run, runs)
