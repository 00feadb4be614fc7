"""Recipes: train a registered model with its protocol, and score codes with every
applicable metric, on the numpy arrays of a split (:class:`hier_models.splits.SplitArrays`).

    import hier_datasets
    from hier_models import recipes
    from hier_models.splits import load_split

    builder = hier_datasets.build("chopsticks/depth2_either_20000_5000")
    train, test = load_split(builder, "train"), load_split(builder, "test")
    trained = recipes.train("BetaTCVAE", train, epochs=10)
    codes = recipes.encode(trained.model, test.observations, test.scale)
    scores = recipes.score(test, codes, hierarchy=recipes.code_hierarchy(trained.model))

:func:`train` fits a flat model of :data:`hier_models.registry.MODELS` with the
paper's learning-rate schedule (on Boxhead, the Boxhead paper's protocol:
:func:`hier_models.protocols.boxhead_protocol`), or the whole hierarchical method
(``"Hierarchical"``: smooth autoencoder -> MIMOSA -> COFHAE); a progress bar per
stage. Settings it refuses before anything trains raise :class:`SettingsError` (a
``ValueError``). This module imports :mod:`hier_metrics`; ``import hier_models`` does
not load it.
"""
from __future__ import annotations

import dataclasses
import inspect
import os
import time
from typing import Callable, Mapping, Sequence

import keras
import numpy as np

import hier_metrics
from hier_datasets.hierarchy import Hierarchy
from hier_metrics.evaluate import ARRAY_METRICS as EVALUATED
from hier_models import distribute, protocols
from hier_models._mimosa import check_hyperparameters, paper_settings
from hier_models.ae import AE
from hier_models.architectures import capacity_architecture
from hier_models.cofhae import COFHAE
from hier_models.hierarchical import fit_hierarchical, grid_label, grid_points
from hier_models.progress import FitProgress, progress
from hier_models.registry import (
    AUTOENCODER_EPOCHS,
    HIERARCHICAL,
    LADDERS,
    MIMOSA_OPTIONS,
    MODELS,
    model_parameters,
    resolve_model,
)
from hier_models.splits import SplitArrays
from hier_models.training import ResumableFit, encode, fit_paper_schedule, training_dataset

__all__ = [
    "ARRAY_METRICS",
    "SettingsError",
    "TrainingRecord",
    "check_options",
    "code_hierarchy",
    "encode",
    "factor_groups",
    "grid_label",
    "initial_dim",
    "jsonable",
    "mimosa_settings",
    "resumes_by_epoch",
    "score",
    "train",
]

#: the array metrics that every representation gets; ``dci_split`` only where the
#: data have factor groups (see :func:`score`)
ARRAY_METRICS = tuple(m for m in EVALUATED if m != "dci_split")


class SettingsError(ValueError):
    """A model name, hyperparameter or value that :func:`train` refuses before
    anything trains; the message names it and what is allowed."""


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


def jsonable(value):
    """``value`` with numpy scalars and arrays (and paths) turned into plain Python values."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    return value


def check_options(model: str, options: Mapping) -> dict:
    """``options`` as a dict, or :class:`SettingsError` naming the hyperparameters
    ``model`` (a canonical name) lacks."""
    known = model_parameters(model)
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise SettingsError(
            f"{model} has no hyperparameter {', '.join(map(repr, unknown))}; it takes {', '.join(sorted(known))}"
        )
    return dict(options)


def initial_dim(dataset_name: str, options: Mapping) -> int:
    """Width of the whole method's smooth autoencoder: ``options["initial_dim"]`` or the
    paper's value for ``dataset_name`` (:func:`hier_models.paper_settings`)."""
    value = options.get("initial_dim")
    if value is None:
        try:
            return int(paper_settings(dataset_name)["initial_dim"])
        except ValueError as err:
            raise SettingsError(
                f"{HIERARCHICAL} has no default initial_dim for {dataset_name}; pass initial_dim=N "
                "(one more than the largest intrinsic dimensionality of the data)"
            ) from err
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise SettingsError(f"initial_dim must be a whole number >= 1, got {value!r}")
    return int(value)


def mimosa_settings(dataset_name: str) -> dict:
    """The MIMOSA hyperparameters the paper used on ``dataset_name``'s family (none for
    families it did not run on: MIMOSA's defaults)."""
    try:
        settings = paper_settings(dataset_name)
    except ValueError:
        return {}
    settings.pop("initial_dim")
    return settings


def resumes_by_epoch(model_name: str, family: str) -> bool:
    """Whether :func:`train` with a ``checkpoint`` resumes ``model_name``'s fit (a
    resolved name) on a dataset of ``family`` by epoch: a flat or ladder model off
    Boxhead, whose fit is :func:`~hier_models.training.fit_paper_schedule`."""
    return model_name != HIERARCHICAL and family != "boxhead"


def code_hierarchy(model) -> Hierarchy | None:
    """The learned hierarchy of a hierarchical model, None for flat ones."""
    return getattr(model, "hierarchy", None) if isinstance(model, COFHAE) else None


def _construct(cls, *args, what: str, **kwargs):
    """``cls(*args, **kwargs)``; the constructors check their hyperparameters, and a
    refusal is a :class:`SettingsError` naming ``what``."""
    try:
        return cls(*args, **kwargs)
    except (ValueError, TypeError) as err:
        raise SettingsError(f"{what}: {err}") from err


def _flat_model(model_name: str, data: SplitArrays, *, latent_dim, seed, options) -> keras.Model:
    cls = MODELS[model_name]
    kwargs = dict(options)
    if latent_dim is not None:
        kwargs["latent_dim"] = latent_dim
    if "dataset_size" in inspect.signature(cls.__init__).parameters:
        kwargs["dataset_size"] = len(data)
    return _construct(cls, data.observations.shape[1:], random_state=seed, what=model_name, **kwargs)


def _architecture_options(model_name: str, options: dict) -> dict:
    """``options`` with ``capacity`` (``"small"`` / ``"large"``) turned into its Boxhead
    architecture."""
    options = dict(options)
    capacity = options.pop("capacity", None)
    if capacity is not None:
        try:
            options["architecture"] = capacity_architecture(capacity, options.get("architecture"))
        except ValueError as err:
            raise SettingsError(f"{model_name}: {err}") from err
    return options


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
        raise SettingsError(f"MIMOSA cannot run on {len(data)} codes of width {width}: {err}") from err
    arch = {k: options.pop(k) for k in ("architecture", "hidden_units") if k in options}
    shape = data.observations.shape[1:]
    _construct(AE, shape, latent_dim=width, activation="softplus", random_state=seed, what="smooth autoencoder", **arch)
    _construct(COFHAE, shape, data.hierarchy, random_state=seed, what="COFHAE", **options, **arch)
    return dict(initial_dim=width, mimosa_options=mimosa_options, cofhae_options=options, **arch)


def _grid_record(fit, grid: Mapping) -> list[dict]:
    """Grid point and final training losses of every COFHAE run (in grid order), the
    selected one marked."""
    return [dict(hyperparameters=point, assignment_loss=r.assignment_loss, reconstruction=r.reconstruction,
                 selected=r is fit.run) for point, r in zip(grid_points(grid), fit.runs)]


def _check_grid(model_name: str, grid: Mapping | None) -> None:
    """Only the whole method has a grid (:func:`hier_models.fit_hierarchical` checks the
    grid against the options)."""
    if grid is not None and model_name != HIERARCHICAL:
        raise SettingsError(f"a grid selects COFHAE's hyperparameters; {model_name} has no grid")


def _selection_record(selection) -> dict:
    """What successive halving did: its rungs (the configurations that trained to each,
    with their training losses there), the ranking best first, and the choice."""
    return dict(
        schedule="successive halving", rungs=[r.epochs for r in selection.rungs],
        points=[grid_label(p) for p in selection.points], ranking=[grid_label(selection.points[i])
                                                                  for i in selection.ranking()],
        per_rung=[dict(epochs=r.epochs, configurations=[grid_label(selection.points[i]) for i in r.configurations],
                       reconstruction=r.reconstruction, assignment_loss=r.assignment, seconds=r.seconds)
                  for r in selection.rungs],
    )


def _train_hierarchical(data, options, *, epochs, autoencoder_epochs, batch_size, seed, show_progress, grid, rungs,
                        checkpoint, scope, settings) -> TrainingRecord:
    fit_settings = _hierarchical_settings(data, options, seed)
    start = time.perf_counter()
    autoencoder_epochs = autoencoder_epochs or AUTOENCODER_EPOCHS
    callback = FitProgress([], enabled=show_progress)  # one bar per stage, named by fit_hierarchical
    mimosa_options = dict(fit_settings["mimosa_options"], verbose=show_progress)
    fit = fit_hierarchical(
        data.observations, epochs=epochs, autoencoder_epochs=autoencoder_epochs, batch_size=batch_size,
        random_state=seed, callbacks=callback.named, grid=grid, rungs=rungs, checkpoint=checkpoint, scale=data.scale,
        strategy=scope,
        **{**fit_settings, "mimosa_options": mimosa_options},
    )
    scores = {
        "mimosa_purity": hier_metrics.purity(data.paths, fit.assignments),
        "mimosa_coverage": hier_metrics.coverage(fit.assignments),
        "mimosa_h_error": hier_metrics.h_error(fit.hierarchy, data.hierarchy),
    }
    settings.update(autoencoder_epochs=autoencoder_epochs, initial_dim=int(fit.initial_codes.shape[1]))
    if fit.selection is not None:
        settings.update(selection=_selection_record(fit.selection),
                        selected=grid_label(fit.selection.points[fit.selection.choice]))
    elif grid is not None:
        record = _grid_record(fit, grid)
        settings.update(grid=record, selected=next(grid_label(r["hyperparameters"]) for r in record if r["selected"]))
    return TrainingRecord(
        HIERARCHICAL, fit.model, settings, callback.history, time.perf_counter() - start,
        hierarchy=fit.hierarchy, assignments=fit.assignments, initial_codes=fit.initial_codes,
        smooth_autoencoder=fit.smooth_autoencoder, mimosa_scores=scores,
    )


def train(
    model_name: str,
    data: SplitArrays,
    *,
    epochs: int,
    autoencoder_epochs: int | None = None,
    batch_size: int = 256,
    random_state: int = 0,
    latent_dim: int | None = None,
    options: Mapping | None = None,
    show_progress: bool = True,
    grid: Mapping | None = None,
    rungs: Sequence[int] | None = None,
    checkpoint=None,
    strategy: str | None = None,
) -> TrainingRecord:
    """Train ``model_name`` (a name of :data:`hier_models.registry.MODEL_NAMES`,
    any case) on ``data`` with the paper's learning-rate schedule.

    Flat models get ``latent_dim`` codes (default: as many as the dataset has
    factors; ladders keep their own default). ``options`` are the model's
    hyperparameters (:func:`hier_models.registry.model_parameters`);
    ``options["capacity"]`` (``"small"`` or ``"large"``) picks the Boxhead paper's
    networks. On a Boxhead dataset the flat models follow that paper's protocol by
    default (:func:`hier_models.protocols.boxhead_protocol`): 12 codes, the small
    networks, its annealing and fade-in timetable, and Adamax at 3e-4 without decay,
    as in its authors' code; every part can be overridden with ``options`` and
    ``latent_dim``. ``"Hierarchical"`` runs the whole method; its smooth autoencoder
    trains for ``autoencoder_epochs`` (default
    :data:`~hier_models.registry.AUTOENCODER_EPOCHS`). With ``grid``
    (Hierarchical only, e.g. :data:`~hier_models.hierarchical.PAPER_GRID`), COFHAE
    trains at every grid point on the same MIMOSA output and the paper's rule keeps
    one run; ``settings["grid"]`` lists every run's losses. With ``rungs`` too
    (:func:`~hier_models.hierarchical.halving_rungs`), the grid runs as successive
    halving, and ``settings["selection"]`` holds its rungs and ranking; ``checkpoint``
    (a folder) makes that selection resumable
    (:func:`~hier_models.hierarchical.successive_halving`), and the fit of a flat or
    ladder model on non-Boxhead data resumable by epoch
    (:class:`~hier_models.training.ResumableFit`): called again with the same
    arguments, a stopped call trains only the epochs left, to the same weights, and
    the history and seconds cover every epoch. ``strategy``
    (``"mirrored"`` or ``"multiworker"``, see :func:`hier_models.distribute.get_strategy`)
    splits each global batch of ``batch_size`` rows over the strategy's replicas.
    ``random_state`` (an integer seed) seeds the weights, the shuffling and the noise.

    Raises:
      SettingsError: a name, option or value refused before anything trains.
      hier_models.NoHierarchyFound: MIMOSA found no hierarchy in the smooth
        autoencoder's codes (``"Hierarchical"``).
    """
    try:
        model_name = resolve_model(model_name)
    except ValueError as err:
        raise SettingsError(str(err)) from err
    options = check_options(model_name, options or {})
    _check_grid(model_name, grid)
    if checkpoint is not None and rungs is None and not resumes_by_epoch(model_name, data.family):
        raise SettingsError("a checkpoint folder resumes a successive-halving selection (give rungs and grid "
                            "too) or a flat or ladder model's fit on non-Boxhead data; otherwise give no checkpoint")
    for what, value in (("epochs", epochs), ("batch size", batch_size)):
        if value < 1:
            raise SettingsError(f"{what} must be at least 1, got {value}")
    seed = random_state
    settings = dict(dataset=data.dataset, split=data.split, num_examples=len(data), model=model_name,
                    epochs=epochs, batch_size=batch_size, seed=seed, options=dict(options))
    try:
        scope = distribute.get_strategy(strategy)
    except ValueError as err:
        raise SettingsError(str(err)) from err
    if scope is not None:
        settings.update(strategy=strategy, replicas=scope.num_replicas_in_sync)
    if model_name == HIERARCHICAL:
        return _train_hierarchical(data, options, epochs=epochs, autoencoder_epochs=autoencoder_epochs,
                                   batch_size=batch_size, seed=seed, show_progress=show_progress, grid=grid,
                                   rungs=rungs, checkpoint=checkpoint, scope=scope, settings=settings)
    boxhead = data.family == "boxhead"
    if boxhead:
        steps = protocols.training_steps(len(data), batch_size, epochs)
        try:
            options = protocols.boxhead_protocol(model_name, options, latent_dim=latent_dim, training_steps=steps)
        except ValueError as err:
            raise SettingsError(str(err)) from err
        settings.update(protocol="boxhead", optimizer=f"Adamax({protocols.LEARNING_RATE:g})")
    else:
        options = _architecture_options(model_name, options)
        if latent_dim is None and model_name not in LADDERS and "latent_dim" not in options:
            latent_dim = data.factors.shape[1]
    keras.utils.set_random_seed(seed)
    start = time.perf_counter()
    with distribute.in_scope(scope):
        model = _flat_model(model_name, data, latent_dim=latent_dim, seed=seed, options=options)
    callback = FitProgress([model_name], enabled=show_progress)
    resume = None if checkpoint is None else ResumableFit(checkpoint)
    if boxhead:
        model.compile(optimizer=protocols.boxhead_optimizer())
        model.fit(training_dataset(data.observations, None, batch_size, seed, scale=data.scale), epochs=epochs,
                  verbose=0, callbacks=[callback])
    else:
        fit_paper_schedule(model, data.observations, epochs=epochs, batch_size=batch_size, random_state=seed,
                           callbacks=[callback], scale=data.scale, resume=resume)
    settings.update(latent_dim=int(model.latent_dim), model_options=jsonable(options))
    if resume is not None:  # the epochs and seconds of every call it took
        return TrainingRecord(model_name, model, settings, {model_name: resume.history}, resume.seconds)
    return TrainingRecord(model_name, model, settings, callback.history, time.perf_counter() - start)


def factor_groups(ground_truth) -> dict[str, list[str]] | None:
    """The macro- and micro-level factor groups of a dataset's metadata (Boxhead), or None."""
    meta = ground_truth.metadata()
    if "macro_factors" not in meta:
        return None
    return {"macro": list(meta["macro_factors"]), "micro": list(meta["micro_factors"])}


def score(
    data: SplitArrays,
    codes: np.ndarray,
    *,
    hierarchy: Hierarchy | None = None,
    representation: Callable | None = None,
    interventional_points: int = 2000,
    random_state: int = 0,
    show_progress: bool = True,
) -> dict:
    """Every applicable metric of ``codes`` (one row per example of ``data``), as
    plain Python values.

    - ``r4``, ``r4c``, ``dci_*``, ``mig``, ``sap`` on the split
      (:func:`hier_metrics.evaluate_arrays`); R4c over ``hierarchy`` (default: the
      codes as one flat, always-active group, :meth:`Hierarchy.flat`);
    - on data with macro- and micro-level factor groups (Boxhead), the split DCI
      ``dci_macro_*`` and ``dci_micro_*``, each code assigned to the group of its
      largest importance (``code_assignment="argmax"``), as the Boxhead paper's
      authors computed it;
    - for hierarchical codes (a ``hierarchy`` with a categorical), ``h_error`` of that
      hierarchy against the true one and ``purity`` of the paths the codes take;
      flat codes get neither (one path says nothing about the hierarchy);
    - with a ``representation`` function (observations -> codes), the FactorVAE and
      beta-VAE scores (:func:`hier_metrics.evaluate`) on fresh samples of the
      generative process, with ``interventional_points`` training votes / points and
      half as many for evaluation (disentanglement_lib uses 10,000); 0 skips them.
    """
    if representation is not None and not callable(representation):
        raise TypeError(f"representation must be a function of observations, got {type(representation).__name__}")
    if isinstance(interventional_points, bool) or not isinstance(interventional_points, (int, np.integer)):
        raise TypeError(f"interventional_points must be an integer, got {interventional_points!r}")
    seed = random_state
    hierarchical = hierarchy is not None and bool(np.any(hierarchy.is_categorical))
    hierarchy = hierarchy or Hierarchy.flat(codes.shape[1])
    gt = data.ground_truth()
    groups = factor_groups(gt)
    metrics = [m for m in EVALUATED if m in ARRAY_METRICS or groups]
    interventional = ["factor_vae", "beta_vae"] if representation is not None and interventional_points > 0 else []
    bar = progress(total=len(metrics) + hierarchical + len(interventional), enabled=show_progress,
                   desc="scoring", unit="metric")

    done = []

    def step(name: str) -> None:
        """Advance the bar past the metric before ``name``."""
        if done:
            bar.update(1)
        done.append(name)
        bar.set_postfix_str(name)

    with bar:
        out = hier_metrics.evaluate_arrays(
            data.factors, codes, factor_active=data.active, code_hierarchy=hierarchy, categorical=data.hierarchy,
            factor_groups=groups, factor_names=data.factor_names, metrics=metrics, random_state=seed,
            metric_options={"dci_split": {"code_assignment": "argmax"}} if groups else None, progress=step,
        )
        if hierarchical:
            step("hierarchy")
            out["h_error"] = hier_metrics.h_error(hierarchy, data.hierarchy)
            out["purity"] = hier_metrics.purity(data.paths, hierarchy.path_index(codes))
        if interventional:
            points = int(interventional_points)
            sizes = dict(num_train=points, num_eval=max(1, points // 2))
            result = hier_metrics.evaluate(
                representation, gt, metrics=interventional, random_state=seed, progress=step,
                metric_options={"factor_vae": dict(sizes, num_variance_estimate=points), "beta_vae": sizes},
            )
            out.update({k: v for k, v in result.items() if k.startswith(tuple(interventional))})
    return jsonable(out)
