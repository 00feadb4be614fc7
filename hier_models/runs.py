"""What the ``hierbench`` commands do: find and load datasets, train models, score
representations, and run a whole benchmark into a run folder.

Datasets are named as for ``tfds.load`` (``chopsticks/depth2_either``,
``spaceshapes``); a name ending in ``_TRAIN_TEST`` (``chopsticks/depth2_either_20000_5000``)
is a resized config of the same process (:func:`hier_datasets.builder.sized_config`),
built on first use. Models are the classes of :data:`hier_models.MODELS` plus
``COFHAE``, which stands for the whole method: a Softplus autoencoder, MIMOSA on its
codes, then COFHAE on the learned hierarchy.

A run folder (``hierbench run --out RUN``) holds::

    run.json                          the settings and one entry per trained model
    data/<dataset>.npz                the test split's factors, activity and paths,
                                      and the train split's paths
    models/<dataset>/<model>-seed<k>/ model.keras, history.json, codes.npy (test
                                      split), metrics.json; for COFHAE also
                                      smooth_autoencoder.keras, hierarchy.json,
                                      assignments.npy, initial_codes.npy
    metrics.json, summary.md, report.html, *.png    the report

Every file is written atomically, so an interrupted command leaves no partial file.
"""
from __future__ import annotations

import dataclasses
import inspect
import io
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Mapping, Sequence

import keras
import numpy as np
from tqdm.auto import tqdm

import hier_datasets
import hier_metrics
import hier_models
from hier_datasets.builder import parse_sized_name
from hier_datasets.hierarchy import Group, Hierarchy
from hier_models import report
from hier_models.cofhae import COFHAE
from hier_models.hierarchical import PAPER_GRID, fit_hierarchical, fit_paper_schedule, grid_points, training_dataset
from hier_models.mimosa import DEFAULTS as MIMOSA_DEFAULTS
from hier_models.mimosa import INITIAL_DIM, SPACESHAPES

__all__ = [
    "CommandError",
    "Dataset",
    "DEFAULT_RUN",
    "MODEL_NAMES",
    "RunSettings",
    "Split",
    "Training",
    "check_codes",
    "check_grid",
    "check_writable",
    "dataset_names",
    "encode",
    "evaluate",
    "load_codes",
    "load_hierarchy",
    "initial_dim",
    "load_model",
    "load_split",
    "model_parameters",
    "prepare",
    "report_run",
    "resolve_dataset",
    "resolve_model",
    "run",
    "save_training",
    "score",
    "train",
]

#: the whole method (smooth AE -> MIMOSA -> COFHAE) goes by this model name
HIERARCHICAL = "COFHAE"
#: every model the command line trains
MODEL_NAMES = (*hier_models.MODELS, HIERARCHICAL)
#: MIMOSA's hyperparameters that --set can give (for COFHAE)
MIMOSA_OPTIONS = tuple(k for k, v in MIMOSA_DEFAULTS.items() if not callable(v)) + ("tree",)
#: epochs of COFHAE's smooth autoencoder: it is cheap, and MIMOSA needs its codes converged
#: (on 20,000 depth2_either examples, 20 epochs give MIMOSA purity 0.67, 60 give 0.96)
AUTOENCODER_EPOCHS = 60
#: observations read from TFDS per batch
READ_BATCH = 1024


class CommandError(Exception):
    """Bad input to a command; the message says what is wrong and what to do."""


def progress(iterable=None, *, enabled: bool = True, **kwargs):
    """A tqdm bar on stderr that disappears when done."""
    return tqdm(iterable, disable=not enabled, leave=False, file=sys.stderr, dynamic_ncols=True, **kwargs)


def _jsonable(value):
    """``value`` with numpy scalars and arrays turned into plain Python values."""
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    return value


def write_json(path: Path, data) -> None:
    report.write_atomic(path, json.dumps(_jsonable(data), indent=2, sort_keys=True) + "\n")


def write_npy(path: Path, array) -> None:
    buf = io.BytesIO()
    np.save(buf, np.asarray(array))
    report.write_atomic(path, buf.getvalue())


def write_npz(path: Path, **arrays) -> None:
    buf = io.BytesIO()
    np.savez_compressed(buf, **{k: np.asarray(v) for k, v in arrays.items()})
    report.write_atomic(path, buf.getvalue())


# ----------------------------------------------------------------- output folders
def check_writable(path, *, kind: str = "folder", option: str = "--out") -> Path:
    """Raise :class:`CommandError` unless ``path`` can be written as a ``kind``
    (``"folder"`` or ``"file"``). Creates nothing: a probe file in the nearest
    existing folder is removed at once."""
    path = Path(path)
    if path.exists() and kind == "folder" and not path.is_dir():
        raise CommandError(f"cannot use {path} as output folder: it is a file; choose another {option}")
    if path.exists() and kind == "file" and path.is_dir():
        raise CommandError(f"cannot write {path}: it is a folder; give a file name to {option}")
    start = path if kind == "folder" else path.parent
    existing = start.absolute()
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise CommandError(f"cannot write to {path}: {existing} is a file, not a folder; choose another {option}")
    try:
        fd, probe = tempfile.mkstemp(prefix=".hierbench-probe-", dir=existing)
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        raise CommandError(f"cannot write to {path}: {err.strerror or err} in {existing}; choose a writable {option}") from None
    return path


# ----------------------------------------------------------------------- datasets
def _families() -> dict[str, list[str]]:
    """Registered dataset families and their config names."""
    import tensorflow_datasets as tfds

    out = {}
    for family in hier_datasets.available():
        configs = getattr(tfds.builder_cls(family), "BUILDER_CONFIGS", [])
        out[family] = [c.name for c in configs]
    return out


def dataset_names() -> list[str]:
    """Every registered dataset as ``family/config``."""
    return [f"{family}/{config}" for family, configs in _families().items() for config in configs]


@dataclasses.dataclass(frozen=True)
class Dataset:
    """A registered dataset, optionally resized: ``family/config[_TRAIN_TEST]``."""

    family: str
    config: str
    train_size: int | None = None
    test_size: int | None = None

    @property
    def name(self) -> str:
        """The name for ``tfds.load`` (once built)."""
        sized = f"_{self.train_size}_{self.test_size}" if self.train_size else ""
        return f"{self.family}/{self.config}{sized}"

    @property
    def process(self) -> str:
        """The generative process, as for ``hier_datasets.ground_truth``."""
        return f"{self.family}/{self.config}"

    @property
    def slug(self) -> str:
        return self.name.replace("/", "-")

    def ground_truth(self):
        return hier_datasets.ground_truth(self.process)


def resolve_dataset(name: str, train_size: int | None = None, test_size: int | None = None) -> Dataset:
    """The :class:`Dataset` named ``name``, resized to ``train_size`` / ``test_size`` if given."""
    families = _families()
    family, _, config = str(name).partition("/")
    hint = f"choose from {', '.join(dataset_names())} (optionally with a _TRAIN_TEST size suffix)"
    if family not in families:
        raise CommandError(f"unknown dataset {name!r}; {hint}")
    config = config or families[family][0]
    sized = parse_sized_name(config)
    if sized and sized[0] in families[family]:
        config = sized[0]
        if train_size is None and test_size is None:
            train_size, test_size = sized[1:]
    if config not in families[family]:
        raise CommandError(f"unknown dataset {name!r}; {hint}")
    if (train_size is None) != (test_size is None):
        raise CommandError("give both --train-size and --test-size, or neither")
    for what, value in (("train size", train_size), ("test size", test_size)):
        if value is not None and value < 1:
            raise CommandError(f"{what} must be a positive number of examples, got {value}")
    return Dataset(family, config, train_size, test_size)


def prepare(dataset: Dataset, data_dir: str | None = None):
    """Build (or reuse) ``dataset`` in the TFDS data dir; returns its builder."""
    import tensorflow_datasets as tfds

    builder = tfds.builder(dataset.name, data_dir=data_dir)  # resized names resolve in the builder
    builder.download_and_prepare()
    return builder


@dataclasses.dataclass
class Split:
    """One split of a dataset as numpy arrays, in the stored (``shuffle_files=False``) order."""

    dataset: Dataset
    split: str
    observations: np.ndarray
    factors: np.ndarray
    active: np.ndarray
    paths: np.ndarray
    hierarchy: Hierarchy

    def __len__(self) -> int:
        return len(self.factors)

    @property
    def factor_names(self) -> tuple[str, ...]:
        return self.hierarchy.names


def load_split(builder, dataset: Dataset, split: str, *, show_progress: bool = True) -> Split:
    """Read ``split`` of a built dataset: observations, factors, activity and paths."""
    import tensorflow_datasets as tfds

    try:
        num = builder.info.splits[split].num_examples
        ds = builder.as_dataset(split=split, shuffle_files=False)
    except (KeyError, ValueError, AssertionError) as err:
        raise CommandError(
            f"unknown split {split!r} of {dataset.name} ({err}); use train or test, or a TFDS slice such as test[:1000]"
        ) from None
    key = builder.info.supervised_keys[0]
    keys = (key, "factors", "active", "path")
    ds = ds.map(lambda ex: {k: ex[k] for k in keys}).batch(READ_BATCH)
    parts = {k: [] for k in keys}
    bar = progress(tfds.as_numpy(ds), enabled=show_progress, total=math.ceil(num / READ_BATCH),
                   desc=f"reading {dataset.name} {split}", unit="batch")
    for batch in bar:
        for k in keys:
            parts[k].append(batch[k])
    arrays = {k: np.concatenate(v) for k, v in parts.items()}
    return Split(
        dataset=dataset,
        split=split,
        observations=arrays[key],
        factors=arrays["factors"].astype(np.float64),
        active=arrays["active"].astype(bool),
        paths=arrays["path"].astype(np.int64),
        hierarchy=Hierarchy.from_json(builder.info.metadata["hierarchy"]),
    )


def encode(model, observations) -> np.ndarray:
    """Codes of observations as stored (uint8 images are scaled as for training)."""
    return model.encode(training_dataset(observations, None, 512, 0, shuffle=False))


# ------------------------------------------------------------------------- models
def resolve_model(name: str) -> str:
    """The model's canonical name (case-insensitive)."""
    by_lower = {m.lower(): m for m in MODEL_NAMES}
    canonical = by_lower.get(str(name).lower())
    if canonical is None:
        raise CommandError(f"unknown model {name!r}; choose from {', '.join(MODEL_NAMES)}")
    return canonical


#: constructor arguments the command line sets itself (or that are internal)
_NOT_HYPERPARAMETERS = {"self", "input_shape", "seed", "heads", "dataset_size", "hierarchy"}


def _constructor_parameters(cls) -> dict:
    """Keyword arguments of ``cls`` and of the hierbench base classes it forwards
    ``**kwargs`` to, with their defaults (None where there is none)."""
    out = {}
    for klass in cls.__mro__:
        if "__init__" not in vars(klass) or not klass.__module__.startswith("hier_models"):
            continue
        for name, p in inspect.signature(klass.__init__).parameters.items():
            if p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL) or name in _NOT_HYPERPARAMETERS or name in out:
                continue
            out[name] = None if p.default is inspect.Parameter.empty else p.default
    return out


def model_parameters(model: str) -> dict:
    """Hyperparameters ``--set`` accepts for ``model``, with their defaults."""
    if model == HIERARCHICAL:
        params = _constructor_parameters(COFHAE)
        params.update({k: MIMOSA_DEFAULTS.get(k, "ball") for k in MIMOSA_OPTIONS}, initial_dim=None)
        return params
    return _constructor_parameters(hier_models.MODELS[model])


def _check_options(model: str, options: Mapping) -> dict:
    known = model_parameters(model)
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise CommandError(
            f"{model} has no hyperparameter {', '.join(map(repr, unknown))}; it takes {', '.join(sorted(known))}"
        )
    return dict(options)


class EpochProgress(keras.callbacks.Callback):
    """One tqdm bar per ``fit`` (named after ``stages`` in order), and the history of each."""

    def __init__(self, stages: Sequence[str], *, enabled: bool = True):
        super().__init__()
        self.stages, self.enabled = list(stages), enabled
        self.history: dict[str, dict[str, list]] = {}
        self._bar = None

    def on_train_begin(self, logs=None):
        index = len(self.history)
        stage = self.stages[index] if index < len(self.stages) else f"stage {index + 1}"
        self._stage = stage
        self.history[stage] = {}
        self._bar = progress(total=self.params.get("epochs"), enabled=self.enabled, desc=f"training {stage}", unit="epoch")

    def on_epoch_end(self, epoch, logs=None):
        for key, value in (logs or {}).items():
            self.history[self._stage].setdefault(key, []).append(float(value))
        if logs and "loss" in logs:
            self._bar.set_postfix(loss=f"{float(logs['loss']):.4g}")
        self._bar.update(1)

    def on_train_end(self, logs=None):
        self._bar.close()


@dataclasses.dataclass
class Training:
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


def _fit_flat(model_name, x, *, latent_dim, epochs, batch_size, seed, options, callback):
    cls = hier_models.MODELS[model_name]
    kwargs = dict(options)
    if latent_dim is not None:
        kwargs["latent_dim"] = latent_dim
    if "dataset_size" in inspect.signature(cls.__init__).parameters:
        kwargs["dataset_size"] = len(x)
    model = cls(x.shape[1:], seed=seed, **kwargs)
    fit_paper_schedule(model, x, epochs=epochs, batch_size=batch_size, seed=seed, callbacks=[callback])
    return model


def initial_dim(dataset: Dataset, options: Mapping) -> int:
    """Width of COFHAE's smooth autoencoder: ``options["initial_dim"]`` or the paper's
    value for the dataset (:data:`hier_models.mimosa.INITIAL_DIM`)."""
    value = options.get("initial_dim") or INITIAL_DIM.get(dataset.process) or INITIAL_DIM.get(dataset.family)
    if value is None:
        raise CommandError(
            f"COFHAE has no default initial_dim for {dataset.process}; pass --set initial_dim=N "
            "(one more than the largest intrinsic dimensionality of the data)"
        )
    return int(value)


def grid_label(point: Mapping) -> str:
    """``tau=0.5 lambda_assign=10 lambda_tc=1``: one grid point as text."""
    return " ".join(f"{k}={v:g}" if isinstance(v, (int, float)) else f"{k}={v}" for k, v in point.items())


def check_grid(model: str, grid: Mapping | None, options: Mapping) -> None:
    """CommandError unless ``grid`` (None: no grid) can select ``model``'s hyperparameters
    given the ``options`` set by hand."""
    if grid is None:
        return
    if model != HIERARCHICAL:
        raise CommandError(f"--grid selects COFHAE's hyperparameters; {model} has no grid")
    clash = sorted(set(grid) & set(options))
    if clash:
        raise CommandError(f"--grid varies {', '.join(grid)}; drop --set {', '.join(clash)}")


def _grid_record(fit, grid: Mapping) -> list[dict]:
    """Grid point and final training losses of every COFHAE run (in grid order), the
    selected one marked."""
    return [dict(hyperparameters=point, assignment_loss=r.assignment_loss, reconstruction=r.reconstruction,
                 selected=r is fit.run) for point, r in zip(grid_points(grid), fit.runs)]


def _fit_hierarchical(data: Split, *, epochs, autoencoder_epochs, batch_size, seed, options, callback, show_progress,
                      grid=None):
    options = dict(options)
    width = initial_dim(data.dataset, options)
    options.pop("initial_dim", None)
    mimosa_options = dict(SPACESHAPES) if data.dataset.family == "spaceshapes" else {}
    mimosa_options.update({k: options.pop(k) for k in list(options) if k in MIMOSA_OPTIONS})
    mimosa_options["verbose"] = show_progress
    arch = {k: options.pop(k) for k in ("architecture", "hidden_units") if k in options}
    try:
        fit = fit_hierarchical(
            data.observations, initial_dim=width, epochs=epochs, autoencoder_epochs=autoencoder_epochs,
            batch_size=batch_size, seed=seed, mimosa_options=mimosa_options, cofhae_options=options,
            callbacks=[callback], grid=grid, **arch,
        )
    except ValueError as err:
        if "component" in str(err) or "neighbors" in str(err):
            raise CommandError(
                f"MIMOSA found no hierarchy in the autoencoder's codes ({err}); train on more examples "
                "or for more --autoencoder-epochs"
            ) from None
        raise
    scores = {
        "mimosa_purity": hier_metrics.purity(data.paths, fit.assignments),
        "mimosa_coverage": hier_metrics.coverage(fit.assignments),
        "mimosa_h_error": hier_metrics.h_error(fit.hierarchy, data.hierarchy),
    }
    return fit, scores


def train(
    model_name: str,
    data: Split,
    *,
    epochs: int,
    autoencoder_epochs: int | None = None,
    batch_size: int = 256,
    seed: int = 0,
    latent_dim: int | None = None,
    options: Mapping | None = None,
    show_progress: bool = True,
    grid: Mapping | None = None,
) -> Training:
    """Train ``model_name`` on ``data`` with the paper's learning-rate schedule.

    Flat models get ``latent_dim`` codes (default: as many as the dataset has
    factors; ladders keep their own default). ``COFHAE`` runs the whole method; its
    smooth autoencoder trains for ``autoencoder_epochs`` (default :data:`AUTOENCODER_EPOCHS`).
    With ``grid`` (COFHAE only, e.g. :data:`~hier_models.hierarchical.PAPER_GRID`),
    COFHAE trains at every grid point on the same MIMOSA output and the paper's rule
    keeps one run; ``settings["grid"]`` lists every run's losses.
    """
    model_name = resolve_model(model_name)
    options = _check_options(model_name, options or {})
    check_grid(model_name, grid, options)
    for what, value in (("epochs", epochs), ("batch size", batch_size)):
        if value < 1:
            raise CommandError(f"{what} must be at least 1, got {value}")
    keras.utils.set_random_seed(seed)
    start = time.perf_counter()
    settings = dict(dataset=data.dataset.name, split=data.split, num_examples=len(data), model=model_name,
                    epochs=epochs, batch_size=batch_size, seed=seed, options=dict(options))
    if model_name == HIERARCHICAL:
        autoencoder_epochs = autoencoder_epochs or AUTOENCODER_EPOCHS
        stages = ["COFHAE"] if grid is None else [f"COFHAE {grid_label(p)}" for p in grid_points(grid)]
        callback = EpochProgress(["smooth autoencoder", *stages], enabled=show_progress)
        fit, scores = _fit_hierarchical(
            data, epochs=epochs, autoencoder_epochs=autoencoder_epochs, batch_size=batch_size, seed=seed,
            options=options, callback=callback, show_progress=show_progress, grid=grid,
        )
        settings.update(autoencoder_epochs=autoencoder_epochs, initial_dim=int(fit.initial_codes.shape[1]))
        if grid is not None:
            record = _grid_record(fit, grid)
            settings.update(grid=record, selected=next(grid_label(r["hyperparameters"]) for r in record if r["selected"]))
        return Training(
            model_name, fit.model, settings, callback.history, time.perf_counter() - start,
            hierarchy=fit.hierarchy, assignments=fit.assignments, initial_codes=fit.initial_codes,
            smooth_autoencoder=fit.smooth_autoencoder, mimosa_scores=scores,
        )
    is_ladder = model_name in ("ProVLAE", "ProLVAE")
    if latent_dim is None and not is_ladder and "latent_dim" not in options:
        latent_dim = data.factors.shape[1]
    callback = EpochProgress([model_name], enabled=show_progress)
    model = _fit_flat(model_name, data.observations, latent_dim=latent_dim, epochs=epochs, batch_size=batch_size,
                      seed=seed, options=options, callback=callback)
    settings.update(latent_dim=int(model.latent_dim))
    return Training(model_name, model, settings, callback.history, time.perf_counter() - start)


def _save_model(model: keras.Model, path: Path) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".keras", dir=path.parent)
    os.close(fd)
    try:
        model.save(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def save_training(training: Training, out_dir) -> list[Path]:
    """Write ``model.keras`` and ``history.json`` (and COFHAE's MIMOSA artefacts)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    _save_model(training.model, out / "model.keras")
    written = [out / "model.keras", out / "history.json"]
    if training.hierarchy is not None:
        _save_model(training.smooth_autoencoder, out / "smooth_autoencoder.keras")
        report.write_atomic(out / "hierarchy.json", training.hierarchy.to_json() + "\n")
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
        raise CommandError(f"cannot load {path} as a Keras model ({type(err).__name__}: {err}); give a .keras file written by hierbench train") from None


def training_record(model_path) -> dict:
    """``history.json`` beside a saved model, or {} if there is none."""
    path = Path(model_path)
    record = (path if path.is_dir() else path.parent) / "history.json"
    return json.loads(record.read_text()) if record.is_file() else {}


def code_hierarchy(model) -> Hierarchy | None:
    """The learned hierarchy of a hierarchical model, None for flat ones."""
    return getattr(model, "hierarchy", None) if isinstance(model, COFHAE) else None


# ------------------------------------------------------------------------ scoring
def flat_hierarchy(width: int) -> Hierarchy:
    """Codes as one group of always-active continuous dimensions z0..z{width-1}."""
    return Hierarchy(Group(tuple(f"z{i}" for i in range(width))))


def check_codes(codes, hierarchy: Hierarchy | None = None, *, source: str = "codes", data: Split | None = None) -> np.ndarray:
    """``codes`` as a 2-D float array, or CommandError: numbers, finite, as many
    columns as ``hierarchy`` has dimensions and, with ``data``, one row per example."""
    arr = np.asarray(codes)
    if arr.ndim != 2:
        raise CommandError(f"{source} has shape {arr.shape}; save a 2-D array, one row per example and one column per code")
    if not np.issubdtype(arr.dtype, np.number) or arr.dtype == bool:
        raise CommandError(f"{source} holds {arr.dtype} values; save numbers (float codes)")
    if hierarchy is not None and arr.shape[1] != hierarchy.num_dims:
        raise CommandError(
            f"{source} has {arr.shape[1]} columns but the code hierarchy has {hierarchy.num_dims} dimensions "
            f"({', '.join(hierarchy.names)}); save codes in its flat layout or give the matching hierarchy"
        )
    if arr.shape[1] < 1:
        raise CommandError(f"{source} has no columns; save at least one code dimension per example")
    if data is not None and arr.shape[0] != len(data):
        order = f"tfds.load({data.dataset.name!r}, split={data.split!r}, shuffle_files=False)"
        raise CommandError(
            f"{source} has {arr.shape[0]} rows but {data.dataset.name} split {data.split!r} has {len(data)} examples; "
            f"save one row per example, in the order of {order}"
        )
    if not np.all(np.isfinite(arr)):
        raise CommandError(f"{source} contains NaN or infinite values; save finite codes")
    return arr.astype(np.float64)


def factor_groups(ground_truth) -> dict[str, list[str]] | None:
    """The macro- and micro-level factor groups of a dataset's metadata (Boxhead), or None."""
    meta = ground_truth.metadata()
    if "macro_factors" not in meta:
        return None
    return {"macro": list(meta["macro_factors"]), "micro": list(meta["micro_factors"])}


#: metrics that every representation gets (see :func:`score`)
ARRAY_METRICS = ("r4", "r4c", "dci", "mig", "sap")


def score(
    data: Split,
    codes: np.ndarray,
    *,
    hierarchy: Hierarchy | None = None,
    representation: Callable | None = None,
    interventional_points: int = 2000,
    seed: int = 0,
    show_progress: bool = True,
) -> dict:
    """Every applicable metric of ``codes`` (one row per example of ``data``).

    - ``r4``, ``r4c``, ``dci_*``, ``mig``, ``sap`` on the split; R4c over
      ``hierarchy`` (default: the codes as one flat, always-active group);
    - on data with macro- and micro-level factor groups (Boxhead), the split DCI
      ``dci_macro_*`` and ``dci_micro_*``, each code assigned to the group of its
      largest importance as the Boxhead paper's authors computed it;
    - for hierarchical codes (a ``hierarchy`` with a categorical), ``h_error`` of that
      hierarchy against the true one and ``purity`` of the paths the codes take;
      flat codes get neither (one path says nothing about the hierarchy);
    - with a ``representation`` function (observations -> codes), the FactorVAE and
      beta-VAE scores on fresh samples of the generative process, with
      ``interventional_points`` training votes / points and half as many for
      evaluation (disentanglement_lib uses 10,000); 0 skips them.
    """
    hierarchical = hierarchy is not None and bool(np.any(hierarchy.is_categorical))
    hierarchy = hierarchy or flat_hierarchy(codes.shape[1])
    groups = factor_groups(data.dataset.ground_truth())
    steps = [*ARRAY_METRICS]
    if groups:
        steps.insert(steps.index("dci") + 1, "dci_split")
    if hierarchical:
        steps.append("hierarchy")
    if representation is not None and interventional_points > 0:
        steps += ["factor_vae", "beta_vae"]
    out: dict = {}
    bar = progress(steps, enabled=show_progress, desc="scoring", unit="metric")
    for step in bar:
        bar.set_postfix_str(step)
        if step in ARRAY_METRICS:
            out.update(hier_metrics.evaluate_arrays(
                data.factors, codes, factor_active=data.active, code_hierarchy=hierarchy,
                categorical=data.hierarchy, metrics=[step], random_state=seed,
            ))
        elif step == "dci_split":
            out.update(hier_metrics.evaluate_arrays(
                data.factors, codes, categorical=data.hierarchy, factor_groups=groups,
                factor_names=data.factor_names, metrics=["dci_split"], random_state=seed,
                metric_options={"dci_split": {"code_assignment": "argmax"}},
            ))
        elif step == "hierarchy":
            out["h_error"] = hier_metrics.h_error(hierarchy, data.hierarchy)
            out["purity"] = hier_metrics.purity(data.paths, hierarchy.path_index(codes))
        else:
            points = int(interventional_points)
            sizes = dict(num_train=points, num_eval=max(1, points // 2))
            if step == "factor_vae":
                sizes["num_variance_estimate"] = points
            fn = hier_metrics.factor_vae_score if step == "factor_vae" else hier_metrics.beta_vae_score
            result = fn(data.dataset.ground_truth(), representation, random_state=seed, **sizes)
            out.update({f"{step}_{k}": v for k, v in result.items()})
    return _jsonable(out)


def load_codes(path) -> np.ndarray:
    """A ``.npy`` array of codes, or CommandError."""
    path = Path(path)
    if not path.is_file():
        raise CommandError(f"no codes file at {path}; save your codes with numpy.save as a .npy file")
    try:
        return np.load(path, allow_pickle=False)
    except (ValueError, OSError) as err:
        raise CommandError(f"cannot read {path} as a .npy array ({err}); save your codes with numpy.save") from None


def load_hierarchy(path) -> Hierarchy:
    """A ``Hierarchy`` JSON file, or CommandError."""
    try:
        return Hierarchy.from_json(Path(path).read_text())
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise CommandError(f"cannot read {path} as a Hierarchy JSON file ({err}); write it with Hierarchy.to_json()") from None


def evaluate(
    dataset_name: str | None,
    split: str = "test",
    *,
    model_path=None,
    codes_path=None,
    hierarchy_path=None,
    out=None,
    data_dir: str | None = None,
    seed: int = 0,
    interventional_points: int = 2000,
    show_progress: bool = True,
) -> dict:
    """Score a saved model or a ``.npy`` file of codes on ``split`` (see :func:`score`);
    writes the result to ``out`` (JSON) when given and returns it.

    Everything that can be checked before the dataset is read is checked first:
    the names, the output path, and the codes' shape against ``hierarchy_path``.
    """
    if (model_path is None) == (codes_path is None):
        raise CommandError("give either a saved model or a codes file")
    if codes_path is not None:
        if dataset_name is None:
            raise CommandError("--codes needs --dataset NAME: the dataset whose split the rows follow")
        source, model = str(codes_path), None
        hierarchy = None if hierarchy_path is None else load_hierarchy(hierarchy_path)
        codes = check_codes(load_codes(codes_path), hierarchy, source=source)
    else:
        if hierarchy_path is not None:
            raise CommandError("--code-hierarchy goes with --codes; a saved model brings its own hierarchy")
        source, model = str(model_path), load_model(model_path)
        dataset_name = dataset_name or training_record(model_path).get("settings", {}).get("dataset")
        if dataset_name is None:
            raise CommandError(f"no training record beside {model_path}; say which data to score with --dataset NAME")
        hierarchy = code_hierarchy(model)
    dataset = resolve_dataset(dataset_name)
    if out is not None:
        check_writable(out, kind="file")
    data = load_split(prepare(dataset, data_dir), dataset, split, show_progress=show_progress)
    if model is None:
        codes = check_codes(codes, hierarchy, source=source, data=data)
        representation = None
    else:
        codes = encode(model, data.observations)
        representation = lambda obs: encode(model, obs)  # noqa: E731
    metrics = score(data, codes, hierarchy=hierarchy, representation=representation,
                    interventional_points=interventional_points, seed=seed, show_progress=show_progress)
    result = dict(dataset=dataset.name, split=split, num_examples=len(data), representation=source, **metrics)
    if out is not None:
        write_json(Path(out), result)
    return result


# ---------------------------------------------------------------------------- run
@dataclasses.dataclass
class RunSettings:
    """Everything ``hierbench run`` does; the defaults are the embedded benchmark."""

    datasets: Sequence[str] = ("chopsticks/depth2_either",)
    models: Sequence[str] = ("AE", "BetaTCVAE", HIERARCHICAL)
    seeds: Sequence[int] = (0,)
    train_size: int | None = 20_000
    test_size: int | None = 5_000
    epochs: int = 10
    autoencoder_epochs: int = AUTOENCODER_EPOCHS
    batch_size: int = 256
    interventional_points: int = 2000
    options: Mapping[str, Mapping] = dataclasses.field(default_factory=dict)
    #: select COFHAE over the paper's 27-run grid (PAPER_GRID) instead of training it once
    grid: bool = False
    data_dir: str | None = None
    out: str = "runs/default"

    def describe(self) -> str:
        sizes = f"{self.train_size} train / {self.test_size} test" if self.train_size else "registered sizes"
        ae = self.autoencoder_epochs
        grid = f", COFHAE selected over the paper's {len(grid_points(PAPER_GRID))}-run grid" if self.grid else ""
        return (
            f"datasets {', '.join(self.datasets)} ({sizes}); models {', '.join(self.models)}; "
            f"seeds {', '.join(map(str, self.seeds))}; {_count(self.epochs, 'epoch')} (COFHAE's smooth autoencoder "
            f"{ae}{grid}), batch {self.batch_size}; FactorVAE / beta-VAE scores from {self.interventional_points} "
            "training votes"
        )


DEFAULT_RUN = RunSettings()


def _count(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def parse_options(pairs: Sequence[str], models: Sequence[str]) -> dict[str, dict]:
    """``KEY=VALUE`` or ``MODEL.KEY=VALUE`` pairs (values as JSON, else text) -> options per model.

    A plain key goes to every model in ``models`` that takes it (at least one must).
    """
    out: dict[str, dict] = {m: {} for m in models}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise CommandError(f"--set {pair!r} is not KEY=VALUE; write e.g. --set beta=4 or --set BetaTCVAE.beta=4")
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = text
        target, dot, name = key.rpartition(".")
        if dot:
            model = resolve_model(target)
            if model not in out:
                raise CommandError(f"--set {pair!r} names {model}, which is not among the models {', '.join(models)}")
            _check_options(model, {name: value})
            out[model][name] = value
            continue
        if len(models) == 1:
            _check_options(models[0], {name: value})
        takers = [m for m in models if name in model_parameters(m)]
        if not takers:
            raise CommandError(f"no model among {', '.join(models)} has a hyperparameter {name!r}; see hierbench train --help")
        for m in takers:
            out[m][name] = value
    return out


def _label(model: str, seed: int, dataset: Dataset, settings: RunSettings) -> str:
    label = model
    if len(settings.seeds) > 1:
        label += f" seed {seed}"
    if len(settings.datasets) > 1:
        label += f" on {dataset.name}"
    return label


def run(settings: RunSettings, *, show_progress: bool = True, log=print) -> tuple[dict, float]:
    """Build, train, score and report; returns the metrics by row label and the seconds taken."""
    out = check_writable(settings.out)
    datasets = [resolve_dataset(name, settings.train_size, settings.test_size) for name in settings.datasets]
    models = [resolve_model(m) for m in settings.models]
    if settings.grid and HIERARCHICAL not in models:
        raise CommandError(f"--grid selects COFHAE's hyperparameters; add {HIERARCHICAL} to the models")
    for model in models:
        _check_options(model, settings.options.get(model, {}))
        if model == HIERARCHICAL:
            check_grid(model, PAPER_GRID if settings.grid else None, settings.options.get(model, {}))
            for dataset in datasets:
                initial_dim(dataset, settings.options.get(model, {}))
    if not settings.seeds:
        raise CommandError("give at least one seed")
    log(f"hierbench run: {settings.describe()}")
    log(f"output: {out}")
    record = dict(settings=dataclasses.asdict(settings), datasets=[d.name for d in datasets], entries=[])
    started = time.perf_counter()
    for dataset in datasets:
        builder = prepare(dataset, settings.data_dir)
        train_split = load_split(builder, dataset, "train", show_progress=show_progress)
        test_split = load_split(builder, dataset, "test", show_progress=show_progress)
        (out / "data").mkdir(parents=True, exist_ok=True)
        write_npz(out / "data" / f"{dataset.slug}.npz", factors=test_split.factors, active=test_split.active,
                  paths=test_split.paths, train_paths=train_split.paths, hierarchy=test_split.hierarchy.to_json())
        for model in models:
            for seed in settings.seeds:
                label = _label(model, seed, dataset, settings)
                log(f"[{time.perf_counter() - started:5.0f} s] {label}: training on {len(train_split)} examples")
                grid = PAPER_GRID if settings.grid and model == HIERARCHICAL else None
                trained = train(model, train_split, epochs=settings.epochs, autoencoder_epochs=settings.autoencoder_epochs,
                                batch_size=settings.batch_size, seed=seed, options=settings.options.get(model, {}),
                                show_progress=show_progress, grid=grid)
                folder = Path("models") / dataset.slug / f"{model}-seed{seed}"
                save_training(trained, out / folder)
                codes = encode(trained.model, test_split.observations)
                log(f"[{time.perf_counter() - started:5.0f} s] {label}: scoring {len(test_split)} test examples")
                metrics = score(
                    test_split, codes, hierarchy=code_hierarchy(trained.model),
                    representation=lambda obs, m=trained.model: encode(m, obs),
                    interventional_points=settings.interventional_points, seed=seed, show_progress=show_progress,
                )
                metrics.update(trained.mimosa_scores)
                write_npy(out / folder / "codes.npy", codes)
                write_json(out / folder / "metrics.json", metrics)
                record["entries"].append(dict(label=label, dataset=dataset.name, data=f"data/{dataset.slug}.npz",
                                              model=model, seed=seed, folder=str(folder.as_posix()),
                                              train_seconds=round(trained.seconds, 1)))
                write_json(out / "run.json", record)
    record["seconds"] = round(time.perf_counter() - started, 1)
    write_json(out / "run.json", record)
    log(f"[{time.perf_counter() - started:5.0f} s] drawing the report")
    metrics = report_run(out, show_progress=show_progress)
    return metrics, time.perf_counter() - started


# ------------------------------------------------------------------------- report
def _run_record(run_dir: Path) -> dict:
    record_path = run_dir / "run.json"
    if not record_path.is_file():
        raise CommandError(f"{run_dir} is not a run folder (no run.json); create one with hierbench run --out {run_dir}")
    record = json.loads(record_path.read_text())
    if not record.get("entries"):
        raise CommandError(f"{run_dir} holds no trained model yet; rerun hierbench run --out {run_dir}")
    return record


def load_run(run_dir, record: dict | None = None) -> tuple[dict, list[report.RunEntry]]:
    """The record (read from ``run.json`` unless given) and entries of a run folder,
    with every artefact the report draws."""
    run_dir = Path(run_dir)
    record = _run_record(run_dir) if record is None else record
    data_cache: dict[str, dict] = {}
    entries = []
    for e in record["entries"]:
        if e["data"] not in data_cache:
            with np.load(run_dir / e["data"]) as npz:
                data_cache[e["data"]] = {k: npz[k] for k in npz.files}
        data = data_cache[e["data"]]
        folder = run_dir / e["folder"]
        missing = [n for n in ("model.keras", "codes.npy", "metrics.json") if not (folder / n).is_file()]
        if missing:
            raise CommandError(f"{folder} lacks {', '.join(missing)}; rerun hierbench run --out {run_dir}")
        model = load_model(folder)
        learned = code_hierarchy(model)
        mimosa_parts = {}
        if learned is not None and (folder / "assignments.npy").is_file():
            mimosa_parts = dict(assignments=np.load(folder / "assignments.npy"),
                                initial_codes=np.load(folder / "initial_codes.npy"))
        entries.append(report.RunEntry(
            label=e["label"], model=model, codes=np.load(folder / "codes.npy"),
            metrics=json.loads((folder / "metrics.json").read_text()),
            factors=data["factors"], active=data["active"], paths=data["paths"], train_paths=data["train_paths"],
            true_hierarchy=Hierarchy.from_json(str(data["hierarchy"])), code_hierarchy=learned, **mimosa_parts,
        ))
    return record, entries


def report_run(run_dir, *, show_progress: bool = True) -> dict:
    """(Re)draw the report of a run folder from its saved artefacts; returns its metrics."""
    run_dir = Path(run_dir)
    record = _run_record(run_dir)
    check_writable(run_dir, option="RUN_DIR")
    record, entries = load_run(run_dir, record)
    s = record["settings"]
    notes = [
        f"Datasets: {', '.join(record['datasets'])}. Models trained for {_count(s['epochs'], 'epoch')} "
        f"(COFHAE's smooth autoencoder {s['autoencoder_epochs']}), batch {s['batch_size']}, "
        f"seeds {', '.join(map(str, s['seeds']))}.",
        "R4, R4c, DCI, MIG, SAP, H-error and purity are measured on the test split; the FactorVAE and beta-VAE "
        f"scores (evaluation accuracy) on fresh samples of the generative process, from {s['interventional_points']} "
        "training votes of 64 samples each; MIMOSA purity and coverage on the training split. Flat codes count "
        "as one always-active group for R4c; H-error and purity are given for hierarchical codes only. On "
        "Boxhead, DCI macro / micro scores each level's factors on the codes whose largest importance is there.",
    ]
    if s.get("grid"):
        notes.append("COFHAE was selected over the paper's grid of tau, lambda_assign and lambda_tc (each run's "
                     "history.json lists the grid's losses and the selected point).")
    if "seconds" in record:
        notes.append(f"The run took {record['seconds']:.0f} s.")
    metrics = {e.label: e.metrics for e in entries}
    figures = report.run_figures(entries, show_progress=show_progress)
    report.write_report(run_dir, metrics, figures, title="hierbench run", notes="\n".join(notes))
    return metrics
