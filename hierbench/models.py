"""Training for the command line: :func:`hier_models.recipes.train` with its refusals
as :class:`~hierbench.errors.CommandError`, and model folders.

:func:`save_training` writes what a training produced into a model folder::

    model.keras, history.json           every model
    smooth_autoencoder.keras, hierarchy.json, assignments.npy, initial_codes.npy
                                        the hierarchical method's intermediate results
"""
from __future__ import annotations

import json
from pathlib import Path

import keras

from hier_models import NoHierarchyFound, recipes
from hier_models.halving_checkpoint import CheckpointMismatch
from hier_models.recipes import TrainingRecord
from hier_models.splits import SplitArrays
from hierbench.errors import CommandError
from hierbench.files import save_keras, write_atomic, write_json, write_npy

__all__ = ["load_model", "save_training", "train", "training_record"]


def train(model_name: str, data: SplitArrays, *, seed: int = 0, **kwargs) -> TrainingRecord:
    """:func:`hier_models.recipes.train` (``seed`` is its ``random_state``); a refused
    setting, or MIMOSA finding no hierarchy, is a :class:`CommandError` that says what
    to change."""
    try:
        return recipes.train(model_name, data, random_state=seed, **kwargs)
    except NoHierarchyFound as err:
        raise CommandError(
            f"MIMOSA found no hierarchy in the autoencoder's codes ({err}); train on more examples "
            "or for more --autoencoder-epochs"
        ) from err
    except CheckpointMismatch as err:
        raise CommandError(f"{err}; here that means an earlier command with other settings left it: give "
                           "another --out, or remove that folder") from err
    except recipes.SettingsError as err:
        raise CommandError(f"{err}; fix the --set value (see hierbench train --help)") from err


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
