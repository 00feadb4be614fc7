"""A folder that lets :func:`~hier_models.hierarchical.successive_halving` stop and resume.

After each configuration finishes a rung, its model is saved as ``<i>-<epochs>.keras``
(weights, both optimisers' states and the step count, so its stateless per-step draws
continue) and its losses, seconds and history go into ``halving.json``, beside the
selection's identity: the grid, rungs, options and digests of the data. A later call
with the same arguments and folder retrains nothing that finished: a survivor is
loaded where it stopped, and its shuffled data order is advanced to the same epoch, so
a resumed selection reproduces an uninterrupted one. Within a rung, each configuration's
fit also saves every epoch (``<i>-<epochs>.backup/``), so a stop there resumes at the
epoch it was on.

Files are written under a temporary name and renamed, and a rung's model replaces the
previous rung's only after ``halving.json`` records it, so a run stopped at any moment
leaves a folder it can resume from.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import keras
import numpy as np

from hier_models.distribute import in_scope

__all__ = ["CheckpointMismatch", "HalvingCheckpoint", "check_identity", "digest"]


class CheckpointMismatch(ValueError):
    """A checkpoint folder that holds another run, or other files."""


def check_identity(folder, identity: dict, saved: dict, what: str = "selection") -> None:
    """Raise :class:`CheckpointMismatch` naming the keys where a checkpoint ``folder``'s
    ``saved`` identity and this run's ``identity`` (both JSON-able dicts) differ."""
    differ = sorted(k for k in identity.keys() | saved.keys() if identity.get(k) != saved.get(k))
    if differ:
        raise CheckpointMismatch(f"checkpoint folder {folder} holds another {what} (its {', '.join(differ)} differ); "
                                 "pass a new folder, or empty this one to start over")


def digest(*arrays) -> str:
    """A SHA-1 of the arrays' shapes, dtypes and bytes: what identifies the data."""
    h = hashlib.sha1()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(f"{a.shape}{a.dtype}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


class HalvingCheckpoint:
    """The checkpoint folder of one successive-halving selection.

    Args:
      folder: created if missing; it must be empty or hold this same selection.
      identity: JSON-able description of the selection (grid points, rungs, options,
        data digests); a folder holding another selection raises
        :class:`CheckpointMismatch` (a ``ValueError``).
    """

    def __init__(self, folder, identity: dict):
        self.folder = Path(folder)
        self.path = self.folder / "halving.json"
        self.identity = json.loads(json.dumps(identity, default=str))
        self.finished: dict[str, dict] = {}
        if self.path.exists():
            state = json.loads(self.path.read_text())
            check_identity(self.folder, self.identity, state["identity"])
            self.finished = state["finished"]
        elif self.folder.exists() and any(self.folder.iterdir()):
            raise CheckpointMismatch(f"checkpoint folder {self.folder} is not empty and holds no halving.json; "
                             "pass a new or empty folder")
        else:  # claimed before anything trains
            self.folder.mkdir(parents=True, exist_ok=True)
            self._write_state()

    @staticmethod
    def _key(epochs: int, i: int) -> str:
        return f"{i}-{epochs}"

    def result(self, epochs: int, i: int) -> dict | None:
        """What configuration ``i`` recorded on finishing ``epochs`` epochs (its
        ``reconstruction``, ``assignment``, ``hyperparameters``, ``seconds`` and
        ``history``), or None if it has not."""
        return self.finished.get(self._key(epochs, i))

    def backup_folder(self, epochs: int, i: int) -> Path:
        """Where configuration ``i``'s fit towards ``epochs`` epochs saves each epoch
        (a :class:`~hier_models.training.ResumableFit` folder), so that a stop within a
        rung loses at most an epoch; removed when the fit ends."""
        return self.folder / f"{self._key(epochs, i)}.backup"

    def load(self, epochs: int, i: int, strategy=None):
        """Configuration ``i``'s model as it finished ``epochs`` epochs, ready to train on."""
        with in_scope(strategy):
            return keras.models.load_model(self.folder / f"{self._key(epochs, i)}.keras")

    def save(self, epochs: int, i: int, model, result: dict, previous: int | None = None) -> None:
        """Record configuration ``i`` after ``epochs`` epochs: ``model`` and ``result``;
        the model it was resumed from, at ``previous`` epochs, is then removed."""
        name = self.folder / f"{self._key(epochs, i)}.keras"
        partial = name.with_suffix(".partial.keras")
        model.save(partial)
        os.replace(partial, name)
        self.finished[self._key(epochs, i)] = result
        self._write_state()
        if previous:
            (self.folder / f"{self._key(previous, i)}.keras").unlink(missing_ok=True)

    def _write_state(self) -> None:
        partial = self.path.with_suffix(".partial")
        partial.write_text(json.dumps({"identity": self.identity, "finished": self.finished}, indent=1))
        os.replace(partial, self.path)
