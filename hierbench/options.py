"""Model names and hyperparameters on the command line.

The command line trains the flat models of :data:`hier_models.MODELS` and
``Hierarchical``, the whole method of Ross & Doshi-Velez (2021): a Softplus
autoencoder, MIMOSA on its codes, then COFHAE on the learned hierarchy
(:func:`hier_models.fit_hierarchical`). ``COFHAE``, its name before, is accepted
with a warning. ``--set KEY=VALUE`` sets a constructor argument of a model (for
``Hierarchical``: of COFHAE, of MIMOSA, or the smooth autoencoder's ``initial_dim``);
``--set capacity=small|large`` picks the Boxhead paper's networks for a flat model.

On a Boxhead dataset the flat models follow the Boxhead paper's protocol
(:func:`hier_models.cli.training.boxhead_protocol`, :mod:`hier_models.protocols`):
12 codes, the small networks (``--set capacity=large`` for the large ones), the
single-layer KL weight annealed over 10,000 steps and the ladders' fade-in
timetable (both shrunk by one factor to end by 60% of a shorter run), and Adamax
at 3e-4. ``--set`` and ``--latent-dim`` override any part of it.
"""
from __future__ import annotations

import inspect
import json
import numbers
from typing import Mapping, Sequence

import hier_models
from hier_models import MIMOSA_DEFAULTS, paper_settings
from hier_models.cli.errors import CommandError
from hier_models.cofhae import COFHAE
from hier_models.hierarchical import PAPER_GRID

__all__ = [
    "AUTOENCODER_EPOCHS",
    "HIERARCHICAL",
    "MIMOSA_OPTIONS",
    "MODEL_NAMES",
    "PAPER_GRID",
    "check_grid",
    "check_options",
    "grid_label",
    "initial_dim",
    "mimosa_settings",
    "model_parameters",
    "parse_options",
    "resolve_model",
    "row_label",
]

#: the whole method (smooth AE -> MIMOSA -> COFHAE) goes by this model name
HIERARCHICAL = "Hierarchical"
#: every model the command line trains
MODEL_NAMES = (*hier_models.MODELS, HIERARCHICAL)
#: how reports name each model's rows (others by their model name)
ROW_LABELS = {HIERARCHICAL: "COFHAE (MIMOSA hierarchy)"}
#: MIMOSA's hyperparameters that --set can give (for Hierarchical)
MIMOSA_OPTIONS = tuple(k for k, v in MIMOSA_DEFAULTS.items() if not callable(v)) + ("tree",)
#: epochs of the smooth autoencoder: it is cheap, and MIMOSA needs its codes converged
#: (on 20,000 depth2_either examples, 20 epochs give MIMOSA purity 0.67, 60 give 0.96)
AUTOENCODER_EPOCHS = 60


def resolve_model(name: str) -> str:
    """The model's canonical name (case-insensitive)."""
    if not isinstance(name, str):
        raise TypeError(f"model name must be a string, got {type(name).__name__}")
    by_lower = {m.lower(): m for m in MODEL_NAMES}
    canonical = by_lower.get(name.lower())
    if canonical is None:
        raise CommandError(f"unknown model {name!r}; choose from {', '.join(MODEL_NAMES)}")
    return canonical


def row_label(model: str) -> str:
    """The report's row label of a model name."""
    return ROW_LABELS.get(model, model)


#: constructor arguments the command line sets itself (or that are internal)
_NOT_HYPERPARAMETERS = {"self", "input_shape", "random_state", "heads", "dataset_size", "hierarchy", "training_steps"}
#: options of the command line's own for every flat model: the Boxhead paper's capacity
#: (None: its small networks on Boxhead, the architecture's default elsewhere)
CLI_PARAMETERS = {"capacity": None}


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
    """Hyperparameters ``--set`` accepts for ``model`` (a canonical name), with their defaults."""
    if model == HIERARCHICAL:
        params = _constructor_parameters(COFHAE)
        params.update({k: MIMOSA_DEFAULTS.get(k, "ball") for k in MIMOSA_OPTIONS}, initial_dim=None)
        return params
    return {**_constructor_parameters(hier_models.MODELS[model]), **CLI_PARAMETERS}


def check_options(model: str, options: Mapping) -> dict:
    """``options`` as a dict, or CommandError naming the hyperparameters ``model`` lacks."""
    known = model_parameters(model)
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise CommandError(
            f"{model} has no hyperparameter {', '.join(map(repr, unknown))}; it takes {', '.join(sorted(known))}"
        )
    return dict(options)


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
            check_options(model, {name: value})
            out[model][name] = value
            continue
        if len(models) == 1:
            check_options(models[0], {name: value})
        takers = [m for m in models if name in model_parameters(m)]
        if not takers:
            raise CommandError(f"no model among {', '.join(models)} has a hyperparameter {name!r}; see hierbench train --help")
        for m in takers:
            out[m][name] = value
    return out


def initial_dim(dataset, options: Mapping) -> int:
    """Width of the smooth autoencoder: ``options["initial_dim"]`` or the paper's value
    for ``dataset`` (a :class:`~hier_models.cli.datasets.DatasetRef`; see
    :func:`hier_models.paper_settings`)."""
    value = options.get("initial_dim")
    if value is None:
        try:
            return int(paper_settings(dataset.process)["initial_dim"])
        except ValueError as err:
            raise CommandError(
                f"{HIERARCHICAL} has no default initial_dim for {dataset.process}; pass --set initial_dim=N "
                "(one more than the largest intrinsic dimensionality of the data)"
            ) from err
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise CommandError(f"initial_dim must be a whole number >= 1, got {value!r}; e.g. --set initial_dim=5")
    return int(value)


def mimosa_settings(dataset) -> dict:
    """The MIMOSA hyperparameters the paper used on ``dataset``'s family (none for
    families it did not run on: MIMOSA's defaults)."""
    try:
        settings = paper_settings(dataset.process)
    except ValueError:
        return {}
    settings.pop("initial_dim")
    return settings


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
