"""Training, saving and loading models for the command line.

:func:`train` fits a flat model, or the whole hierarchical method
(:func:`hier_models.fit_hierarchical`: smooth autoencoder -> MIMOSA -> COFHAE),
with the paper's learning-rate schedule and a progress bar per stage (on Boxhead,
the flat models follow the Boxhead paper's protocol instead: :func:`boxhead_protocol`);
:func:`save_training` writes what it produced into a model folder::

    model.keras, history.json           every model
    smooth_autoencoder.keras, hierarchy.json, assignments.npy, initial_codes.npy
                                        the hierarchical method's intermediate results
"""
from __future__ import annotations

import dataclasses
import inspect
import json
import time
from pathlib import Path
from typing import Mapping, Sequence

import keras
import numpy as np

import hier_metrics
import hier_models
from hier_datasets.hierarchy import Hierarchy
from hier_models import distribute, protocols
from hier_models._mimosa import NoHierarchyFound, check_hyperparameters
from hier_models.ae import AE
from hier_models.architectures import capacity_architecture
from hier_models.cli.datasets import SplitArrays
from hier_models.cli.errors import CommandError
from hier_models.cli.files import jsonable, progress, save_keras, write_atomic, write_json, write_npy
from hier_models.cli.options import (
    AUTOENCODER_EPOCHS,
    HIERARCHICAL,
    MIMOSA_OPTIONS,
    check_grid,
    check_options,
    grid_label,
    initial_dim,
    mimosa_settings,
    resolve_model,
)
from hier_models.cofhae import COFHAE
from hier_models.hierarchical import fit_hierarchical, fit_paper_schedule, grid_points, training_dataset

__all__ = [
    "FitProgress",
    "TrainingRecord",
    "boxhead_protocol",
    "code_hierarchy",
    "encode",
    "load_model",
    "save_training",
    "train",
    "training_record",
]


class FitProgress(keras.callbacks.Callback):
    """One tqdm bar per ``fit`` (named after ``stages`` in order) that counts epochs,
    or steps with ``unit="step"`` (for a single long epoch), and the history of each."""

    def __init__(self, stages: Sequence[str], *, enabled: bool = True, unit: str = "epoch"):
        super().__init__()
        if unit not in ("epoch", "step"):
            raise ValueError(f"unit must be 'epoch' or 'step', not {unit!r}")
        self.stages, self.enabled, self.unit = list(stages), enabled, unit
        self.history: dict[str, dict[str, list]] = {}
        self._bar = None

    def on_train_begin(self, logs=None):
        index = len(self.history)
        stage = self.stages[index] if index < len(self.stages) else f"stage {index + 1}"
        self._stage = stage
        self.history[stage] = {}
        total, steps = self.params.get("epochs"), self.params.get("steps")
        if self.unit == "step":
            total = total * steps if total and steps else None
        self._bar = progress(total=total, enabled=self.enabled, desc=f"training {stage}", unit=self.unit)

    def _advance(self, logs):
        if logs and "loss" in logs:
            self._bar.set_postfix(loss=f"{float(logs['loss']):.4g}", refresh=False)
        self._bar.update(1)

    def on_train_batch_end(self, batch, logs=None):
        if self.unit == "step":
            self._advance(logs)

    def on_epoch_end(self, epoch, logs=None):
        for key, value in (logs or {}).items():
            self.history[self._stage].setdefault(key, []).append(float(value))
        if self.unit == "epoch":
            self._advance(logs)

    def on_train_end(self, logs=None):
        self._bar.close()


@dataclasses.dataclass
class TrainingRecord:
    """A trained model and what its training produced."""

    model_name: str
    model: keras.Model
    settings: dict
    history: dict
    seconds: float
    hierarchy: Hierarchy | None = None
    assignments: np.ndarray | None = None
    initial_codes: np.ndarray | None = None
    smooth_autoencoder: keras.Model | None = None
    mimosa_scores: dict = dataclasses.field(default_factory=dict)


def encode(model, observations, scale: float | None = None) -> np.ndarray:
    """Codes of ``observations`` as stored; ``scale`` maps integer images to [0, 1]
    (see :class:`~hier_models.cli.datasets.SplitArrays`)."""
    return model.encode(training_dataset(observations, None, 512, 0, shuffle=False, scale=scale))


def _construct(cls, *args, what: str, **kwargs):
    """``cls(*args, **kwargs)``; the constructors check their hyperparameters, which
    come from --set, so a refusal is the user's to fix (CommandError)."""
    try:
        return cls(*args, **kwargs)
    except (ValueError, TypeError) as err:
        raise CommandError(f"{what}: {err}; fix the --set value (see hierbench train --help)") from err


def _flat_model(model_name: str, data: SplitArrays, *, latent_dim, seed, options) -> keras.Model:
    cls = hier_models.MODELS[model_name]
    kwargs = dict(options)
    if latent_dim is not None:
        kwargs["latent_dim"] = latent_dim
    if "dataset_size" in inspect.signature(cls.__init__).parameters:
        kwargs["dataset_size"] = len(data)
    return _construct(cls, data.observations.shape[1:], random_state=seed, what=model_name, **kwargs)


def _architecture_options(model_name: str, options: dict) -> dict:
    """``options`` with ``capacity`` (``"small"`` / ``"large"``) turned into its Boxhead
    architecture, or CommandError."""
    options = dict(options)
    capacity = options.pop("capacity", None)
    if capacity is not None:
        try:
            options["architecture"] = capacity_architecture(capacity, options.get("architecture"))
        except ValueError as err:
            raise CommandError(f"{model_name}: {err}") from err
    return options


def boxhead_protocol(model_name: str, options: Mapping, *, latent_dim: int | None, training_steps: int) -> dict:
    """The constructor arguments of ``model_name`` on a Boxhead dataset: the Boxhead
    paper's protocol (:func:`hier_models.protocols.boxhead_settings`: 12 codes, the
    small or large networks of its appendix B.2, the KL weight annealed down to beta
    from 200 over 10,000 steps for single-layer models and from 150 over 5,000 for
    the ladders' top layer, the ladders' fade-in timetable, all shrunk to fit a
    shorter run), overridden by ``options`` (``--set``) and ``latent_dim``
    (``--latent-dim``). ``options["capacity"]`` chooses the networks (default small);
    ``--set beta_anneal_steps=0`` (constant beta) drops the protocol's start value."""
    options = dict(options)
    capacity = options.pop("capacity", None) or "small"
    try:
        settings = protocols.boxhead_settings(model_name, capacity, training_steps)
    except ValueError as err:
        raise CommandError(f"{model_name}: {err}; use --set capacity=small or --set capacity=large") from err
    if "architecture" in options:
        settings.pop("architecture")
    if latent_dim is not None or "latent_dim" in options or "latents_per_layer" in options:
        settings.pop("latent_dim", None)
        settings.pop("latents_per_layer", None)
    if options.get("beta_anneal_steps") == 0:
        settings.pop("beta_start", None)
    return {**settings, **options}


def _is_boxhead(data: SplitArrays) -> bool:
    return data.dataset.family == "boxhead"


def _hierarchical_settings(data: SplitArrays, options: Mapping, seed: int) -> dict:
    """The arguments of :func:`fit_hierarchical` that ``options`` give, every value
    checked before anything trains."""
    options = dict(options)
    width = initial_dim(data.dataset, options)
    options.pop("initial_dim", None)
    mimosa_options = mimosa_settings(data.dataset)
    mimosa_options.update({k: options.pop(k) for k in list(options) if k in MIMOSA_OPTIONS})
    try:
        check_hyperparameters(len(data), width, **mimosa_options)
    except ValueError as err:
        raise CommandError(f"MIMOSA cannot run on {len(data)} codes of width {width}: {err}") from err
    arch = {k: options.pop(k) for k in ("architecture", "hidden_units") if k in options}
    shape = data.observations.shape[1:]
    _construct(AE, shape, latent_dim=width, activation="softplus", random_state=seed, what="smooth autoencoder", **arch)
    _construct(COFHAE, shape, data.hierarchy, random_state=seed, what="COFHAE", **options, **arch)
    return dict(initial_dim=width, mimosa_options=mimosa_options, cofhae_options=options, **arch)


def _fit_hierarchical(data: SplitArrays, settings: Mapping, *, epochs, autoencoder_epochs, batch_size, seed, callback,
                      show_progress, grid=None, strategy=None):
    mimosa_options = dict(settings["mimosa_options"], verbose=show_progress)
    try:
        fit = fit_hierarchical(
            data.observations, epochs=epochs, autoencoder_epochs=autoencoder_epochs, batch_size=batch_size,
            random_state=seed,
            callbacks=[callback], grid=grid, scale=data.scale, strategy=strategy,
            **{**settings, "mimosa_options": mimosa_options},
        )
    except NoHierarchyFound as err:
        raise CommandError(
            f"MIMOSA found no hierarchy in the autoencoder's codes ({err}); train on more examples "
            "or for more --autoencoder-epochs"
        ) from err
    scores = {
        "mimosa_purity": hier_metrics.purity(data.paths, fit.assignments),
        "mimosa_coverage": hier_metrics.coverage(fit.assignments),
        "mimosa_h_error": hier_metrics.h_error(fit.hierarchy, data.hierarchy),
    }
    return fit, scores


def _grid_record(fit, grid: Mapping) -> list[dict]:
    """Grid point and final training losses of every COFHAE run (in grid order), the
    selected one marked."""
    return [dict(hyperparameters=point, assignment_loss=r.assignment_loss, reconstruction=r.reconstruction,
                 selected=r is fit.run) for point, r in zip(grid_points(grid), fit.runs)]


def train(
    model_name: str,
    data: SplitArrays,
    *,
    epochs: int,
    autoencoder_epochs: int | None = None,
    batch_size: int = 256,
    seed: int = 0,
    latent_dim: int | None = None,
    options: Mapping | None = None,
    show_progress: bool = True,
    grid: Mapping | None = None,
    strategy: str | None = None,
) -> TrainingRecord:
    """Train ``model_name`` on ``data`` with the paper's learning-rate schedule.

    Flat models get ``latent_dim`` codes (default: as many as the dataset has
    factors; ladders keep their own default). ``options["capacity"]`` (``"small"`` or
    ``"large"``) picks the Boxhead paper's networks. On a Boxhead dataset the flat
    models follow that paper's protocol by default (:func:`boxhead_protocol`): 12
    codes, the small networks, its annealing and fade-in timetable, and Adamax at
    3e-4 without decay, as in its authors' code (:mod:`hier_models.protocols`); every
    part can be overridden with ``options`` and ``latent_dim``. ``Hierarchical`` runs the whole method;
    its smooth autoencoder trains for ``autoencoder_epochs`` (default
    :data:`~hier_models.cli.options.AUTOENCODER_EPOCHS`). With ``grid`` (Hierarchical
    only, e.g. :data:`~hier_models.hierarchical.PAPER_GRID`), COFHAE trains at every
    grid point on the same MIMOSA output and the paper's rule keeps one run;
    ``settings["grid"]`` lists every run's losses. ``strategy`` (``"mirrored"`` or
    ``"multiworker"``, see :func:`hier_models.distribute.get_strategy`) splits each
    global batch of ``batch_size`` rows over the strategy's replicas.
    """
    model_name = resolve_model(model_name)
    options = check_options(model_name, options or {})
    check_grid(model_name, grid, options)
    for what, value in (("epochs", epochs), ("batch size", batch_size)):
        if value < 1:
            raise CommandError(f"{what} must be at least 1, got {value}")
    settings = dict(dataset=data.dataset.name, split=data.split, num_examples=len(data), model=model_name,
                    epochs=epochs, batch_size=batch_size, seed=seed, options=dict(options))
    try:
        scope = distribute.get_strategy(strategy)
    except ValueError as err:
        raise CommandError(str(err)) from err
    if scope is not None:
        settings.update(strategy=strategy, replicas=scope.num_replicas_in_sync)
    if model_name == HIERARCHICAL:
        fit_settings = _hierarchical_settings(data, options, seed)
        keras.utils.set_random_seed(seed)
        start = time.perf_counter()
        autoencoder_epochs = autoencoder_epochs or AUTOENCODER_EPOCHS
        stages = ["COFHAE"] if grid is None else [f"COFHAE {grid_label(p)}" for p in grid_points(grid)]
        callback = FitProgress(["smooth autoencoder", *stages], enabled=show_progress)
        fit, scores = _fit_hierarchical(
            data, fit_settings, epochs=epochs, autoencoder_epochs=autoencoder_epochs, batch_size=batch_size, seed=seed,
            callback=callback, show_progress=show_progress, grid=grid, strategy=scope,
        )
        settings.update(autoencoder_epochs=autoencoder_epochs, initial_dim=int(fit.initial_codes.shape[1]))
        if grid is not None:
            record = _grid_record(fit, grid)
            settings.update(grid=record, selected=next(grid_label(r["hyperparameters"]) for r in record if r["selected"]))
        return TrainingRecord(
            model_name, fit.model, settings, callback.history, time.perf_counter() - start,
            hierarchy=fit.hierarchy, assignments=fit.assignments, initial_codes=fit.initial_codes,
            smooth_autoencoder=fit.smooth_autoencoder, mimosa_scores=scores,
        )
    is_ladder = model_name in ("ProVLAE", "ProLVAE")
    boxhead = _is_boxhead(data)
    if boxhead:
        steps = protocols.training_steps(len(data), batch_size, epochs)
        options = boxhead_protocol(model_name, options, latent_dim=latent_dim, training_steps=steps)
        settings.update(protocol="boxhead", optimizer=f"Adamax({protocols.LEARNING_RATE:g})")
    else:
        options = _architecture_options(model_name, options)
        if latent_dim is None and not is_ladder and "latent_dim" not in options:
            latent_dim = data.factors.shape[1]
    keras.utils.set_random_seed(seed)
    start = time.perf_counter()
    with distribute.in_scope(scope):
        model = _flat_model(model_name, data, latent_dim=latent_dim, seed=seed, options=options)
    callback = FitProgress([model_name], enabled=show_progress)
    if boxhead:
        model.compile(optimizer=protocols.boxhead_optimizer())
        model.fit(training_dataset(data.observations, None, batch_size, seed, scale=data.scale), epochs=epochs,
                  verbose=0, callbacks=[callback])
    else:
        fit_paper_schedule(model, data.observations, epochs=epochs, batch_size=batch_size, random_state=seed,
                           callbacks=[callback], scale=data.scale)
    settings.update(latent_dim=int(model.latent_dim), model_options=jsonable(options))
    return TrainingRecord(model_name, model, settings, callback.history, time.perf_counter() - start)


def save_training(training: TrainingRecord, out_dir) -> list[Path]:
    """Write ``model.keras`` and ``history.json`` (and the hierarchical method's
    intermediate results) into ``out_dir``; returns the paths written."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    save_keras(training.model, out / "model.keras")
    written = [out / "model.keras", out / "history.json"]
    if training.hierarchy is not None:
        save_keras(training.smooth_autoencoder, out / "smooth_autoencoder.keras")
        write_atomic(out / "hierarchy.json", training.hierarchy.to_json() + "\n")
        write_npy(out / "assignments.npy", training.assignments)
        write_npy(out / "initial_codes.npy", training.initial_codes)
        written += [out / n for n in ("smooth_autoencoder.keras", "hierarchy.json", "assignments.npy", "initial_codes.npy")]
    record = dict(settings=training.settings, seconds=training.seconds, history=training.history, **training.mimosa_scores)
    write_json(out / "history.json", record)
    return written


def load_model(path) -> keras.Model:
    """A saved model: a ``.keras`` file or a folder holding ``model.keras``."""
    path = Path(path)
    if path.is_dir():
        path = path / "model.keras"
    if not path.is_file():
        raise CommandError(f"no saved model at {path}; give a .keras file or a folder written by hierbench train")
    try:
        return keras.models.load_model(path)
    except Exception as err:  # Keras raises many kinds for unreadable files
        raise CommandError(
            f"cannot load {path} as a Keras model ({type(err).__name__}: {err}); give a .keras file written by hierbench train"
        ) from err


def training_record(model_path) -> dict:
    """``history.json`` beside a saved model, or {} if there is none."""
    path = Path(model_path)
    record = (path if path.is_dir() else path.parent) / "history.json"
    return json.loads(record.read_text()) if record.is_file() else {}


def code_hierarchy(model) -> Hierarchy | None:
    """The learned hierarchy of a hierarchical model, None for flat ones."""
    return getattr(model, "hierarchy", None) if isinstance(model, COFHAE) else None
