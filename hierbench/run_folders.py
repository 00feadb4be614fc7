"""Run folders: what ``hierbench run --out RUN`` writes, and reading it back for the
report.

A run folder holds::

    run.json                          the settings and one entry per trained model
    data/<dataset>.npz                the test split's factors, activity and paths,
                                      and the train split's paths
    models/<dataset>/<model>-seed<k>/ model.keras, history.json, codes.npy (test
                                      split), metrics.json; for the hierarchical
                                      method also smooth_autoencoder.keras,
                                      hierarchy.json, assignments.npy, initial_codes.npy;
                                      while --halving selects, halving/ (its
                                      checkpoint: the same command again resumes it);
                                      while a flat or ladder model trains on
                                      non-Boxhead data, backup/ (its fit by epoch, the same)
    metrics.json, summary.md, report.html, *.png    the report

Every file is written atomically, so an interrupted command leaves no partial file,
and ``run.json`` is rewritten after each model: a folder always describes the
models finished so far.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from hier_datasets.hierarchy import Hierarchy
from hier_models.recipes import code_hierarchy, resumes_by_epoch
from hier_models.splits import SplitArrays
from hierbench.errors import CommandError
from hierbench.figures import RunEntry
from hierbench.files import write_npz
from hierbench.models import load_model

__all__ = ["FIT_BACKUP", "HALVING_CHECKPOINT", "RECORD", "checkpoint_folder", "data_file", "load_run", "model_folder",
           "read_record", "write_data"]

#: the run's settings and entries, beside the report
RECORD = "run.json"
#: a model folder's checkpoint of a successive-halving selection, removed once the model is saved
HALVING_CHECKPOINT = "halving"
#: a model folder's backup of a flat or ladder model's fit, by epoch, removed when the fit ends
FIT_BACKUP = "backup"
#: what every model folder of a finished entry holds
ENTRY_FILES = ("model.keras", "codes.npy", "metrics.json")


def _slug(dataset: str) -> str:
    return dataset.replace("/", "-")


def model_folder(dataset: str, model: str, seed: int) -> Path:
    """The folder of one trained model on ``dataset`` (its name), relative to the run folder."""
    return Path("models") / _slug(dataset) / f"{model}-seed{seed}"


def checkpoint_folder(folder: Path, model: str, family: str, halving: bool) -> Path | None:
    """Where training ``model`` into the model ``folder`` keeps what lets the same
    command resume it (``hier_models.recipes.train``'s ``checkpoint``): the selection's
    checkpoint with ``halving``; else, on a dataset ``family`` other than Boxhead, a flat
    or ladder model's fit backup; else None (that training restarts)."""
    if halving:
        return Path(folder) / HALVING_CHECKPOINT
    return Path(folder) / FIT_BACKUP if resumes_by_epoch(model, family) else None


def data_file(dataset: str) -> Path:
    """The file of ``dataset``'s labels (by its name), relative to the run folder."""
    return Path("data") / f"{_slug(dataset)}.npz"


def write_data(run_dir, train: SplitArrays, test: SplitArrays) -> Path:
    """Save the labels the report needs: the test split's factors, activity and paths,
    the train split's paths, and the true hierarchy; returns the relative path."""
    relative = data_file(test.dataset)
    (Path(run_dir) / relative).parent.mkdir(parents=True, exist_ok=True)
    write_npz(Path(run_dir) / relative, factors=test.factors, active=test.active, paths=test.paths,
              train_paths=train.paths, hierarchy=test.hierarchy.to_json())
    return relative


def read_record(run_dir) -> dict:
    """``run.json`` of a run folder with at least one entry, or CommandError."""
    run_dir = Path(run_dir)
    path = run_dir / RECORD
    if not path.is_file():
        raise CommandError(f"{run_dir} is not a run folder (no {RECORD}); create one with hierbench run --out {run_dir}")
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise CommandError(f"cannot read {path} ({err}); rerun hierbench run --out {run_dir}") from err
    if not record.get("entries"):
        raise CommandError(f"{run_dir} holds no trained model yet; rerun hierbench run --out {run_dir}")
    return record


def load_run(run_dir, record: dict | None = None) -> tuple[dict, list[RunEntry]]:
    """The record (read from ``run.json`` unless given) and entries of a run folder,
    with every artefact the report draws."""
    run_dir = Path(run_dir)
    record = read_record(run_dir) if record is None else record
    data_cache: dict[str, dict] = {}
    entries = []
    for e in record["entries"]:
        if e["data"] not in data_cache:
            with np.load(run_dir / e["data"]) as npz:
                data_cache[e["data"]] = {k: npz[k] for k in npz.files}
        data = data_cache[e["data"]]
        folder = run_dir / e["folder"]
        missing = [n for n in ENTRY_FILES if not (folder / n).is_file()]
        if missing:
            raise CommandError(f"{folder} lacks {', '.join(missing)}; rerun hierbench run --out {run_dir}")
        model = load_model(folder)
        learned = code_hierarchy(model)
        mimosa_parts = {}
        if learned is not None and (folder / "assignments.npy").is_file():
            mimosa_parts = dict(assignments=np.load(folder / "assignments.npy"),
                                initial_codes=np.load(folder / "initial_codes.npy"))
        entries.append(RunEntry(
            label=e["label"], model=model, codes=np.load(folder / "codes.npy"),
            metrics=json.loads((folder / "metrics.json").read_text()),
            factors=data["factors"], active=data["active"], paths=data["paths"], train_paths=data["train_paths"],
            true_hierarchy=Hierarchy.from_json(str(data["hierarchy"])), code_hierarchy=learned, **mimosa_parts,
        ))
    return record, entries
