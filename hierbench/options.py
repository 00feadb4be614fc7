"""Model names and hyperparameters on the command line.

The command line trains the models of :data:`hier_models.registry.MODEL_NAMES`: the
flat models and ``Hierarchical``, the whole method of Ross & Doshi-Velez (2021): a
Softplus autoencoder, MIMOSA on its codes, then COFHAE on the learned hierarchy
(:func:`hier_models.fit_hierarchical`). ``--set KEY=VALUE`` sets a hyperparameter of
a model (:func:`hier_models.registry.model_parameters`; for ``Hierarchical``: of
COFHAE, of MIMOSA, or the smooth autoencoder's ``initial_dim``); ``--set
capacity=small|large`` picks the Boxhead paper's networks for a flat model.

On a Boxhead dataset the flat models follow the Boxhead paper's protocol
(:func:`hier_models.protocols.boxhead_protocol`): 12 codes, the small networks
(``--set capacity=large`` for the large ones), the single-layer KL weight annealed
over 10,000 steps and the ladders' fade-in timetable (both shrunk by one factor to
end by 60% of a shorter run), and Adamax at 3e-4. ``--set`` and ``--latent-dim``
override any part of it.

The checks here are those of :mod:`hier_models.recipes` and
:mod:`hier_models.registry`, their refusals as :class:`~hierbench.errors.CommandError`
that name the command line's options.
"""
from __future__ import annotations

import json
from typing import Mapping, Sequence

from hier_models import recipes, registry
from hier_models.hierarchical import PAPER_GRID
from hier_models.recipes import grid_label, mimosa_settings
from hier_models.registry import AUTOENCODER_EPOCHS, HIERARCHICAL, MIMOSA_OPTIONS, MODEL_NAMES, model_parameters
from hierbench.errors import CommandError

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

#: how reports name each model's rows (others by their model name)
ROW_LABELS = {HIERARCHICAL: "COFHAE (MIMOSA hierarchy)"}


def resolve_model(name: str) -> str:
    """The model's canonical name (case-insensitive), or CommandError."""
    try:
        return registry.resolve_model(name)
    except ValueError as err:
        raise CommandError(str(err)) from err


def row_label(model: str) -> str:
    """The report's row label of a model name."""
    return ROW_LABELS.get(model, model)


def check_options(model: str, options: Mapping) -> dict:
    """``options`` as a dict, or CommandError naming the hyperparameters ``model`` lacks."""
    try:
        return recipes.check_options(model, options)
    except recipes.SettingsError as err:
        raise CommandError(str(err)) from err


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
    for ``dataset`` (a :class:`~hierbench.datasets.DatasetRef`), or CommandError."""
    value = options.get("initial_dim")
    try:
        return recipes.initial_dim(dataset.process, options)
    except recipes.SettingsError as err:
        if value is None:
            raise CommandError(
                f"{HIERARCHICAL} has no default initial_dim for {dataset.process}; pass --set initial_dim=N "
                "(one more than the largest intrinsic dimensionality of the data)"
            ) from err
        raise CommandError(f"{err}; e.g. --set initial_dim=5") from err


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
