"""Progress bars: :func:`progress`, the one tqdm helper of the libraries (MIMOSA's
steps, reading a split, training, scoring), and :class:`FitProgress`, a Keras
callback with one bar per ``fit``.

Bars go to stderr and disappear when done; ``enabled=False`` silences them.
"""
from __future__ import annotations

import sys
from typing import Sequence

import keras
from tqdm.auto import tqdm

__all__ = ["FitProgress", "progress"]


def progress(iterable=None, *, enabled: bool = True, **kwargs):
    """A tqdm bar over ``iterable`` (or a manual one with ``total=``) on stderr that
    disappears when done; ``kwargs`` go to tqdm (``desc``, ``unit``, ``total``)."""
    return tqdm(iterable, disable=not enabled, leave=False, file=sys.stderr, dynamic_ncols=True, **kwargs)


class FitProgress(keras.callbacks.Callback):
    """One tqdm bar per ``fit`` (named after ``stages`` in order) that counts epochs,
    or steps with ``unit="step"`` (for a single long epoch), and the history of each.

    ``history[stage]`` maps each logged metric to its per-epoch values. Where the
    stages are not known in advance, :meth:`named` names the next ``fit`` (a ``fit``
    that continues a stage, from ``initial_epoch``, extends its history and bar).
    """

    def __init__(self, stages: Sequence[str], *, enabled: bool = True, unit: str = "epoch"):
        super().__init__()
        if unit not in ("epoch", "step"):
            raise ValueError(f"unit must be 'epoch' or 'step', not {unit!r}")
        self.stages, self.enabled, self.unit = list(stages), enabled, unit
        self.history: dict[str, dict[str, list]] = {}
        self._bar = self._next = None
        self._fits = 0

    def named(self, stage: str) -> list:
        """``[self]``, the callbacks of a ``fit`` that the bar and history call ``stage``."""
        self._next = stage
        return [self]

    def on_train_begin(self, logs=None):
        index, self._fits = self._fits, self._fits + 1
        stage = self._next or (self.stages[index] if index < len(self.stages) else f"stage {index + 1}")
        self._stage, self._next = stage, None
        self.history.setdefault(stage, {})
        total, steps = self.params.get("epochs"), self.params.get("steps")
        if self.unit == "step":
            total = total * steps if total and steps else None
        self._bar = progress(total=total, enabled=self.enabled, desc=f"training {stage}", unit=self.unit)

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch_steps = 0
        if self.unit == "epoch" and self._bar.n == 0 and epoch > 0:  # a fit that continues from initial_epoch
            self._bar.update(epoch)

    def _advance(self, logs, by: int = 1):
        if logs and "loss" in logs:
            self._bar.set_postfix(loss=f"{float(logs['loss']):.4g}", refresh=False)
        self._bar.update(by)

    def on_train_batch_end(self, batch, logs=None):
        if self.unit == "step":  # ``batch``: the call's last step (Keras may name one past the epoch's end)
            done = min(batch + 1, self.params.get("steps") or batch + 1)
            self._advance(logs, done - self._epoch_steps)
            self._epoch_steps = done

    def on_epoch_end(self, epoch, logs=None):
        for key, value in (logs or {}).items():
            self.history[self._stage].setdefault(key, []).append(float(value))
        if self.unit == "epoch":
            self._advance(logs)

    def on_train_end(self, logs=None):
        self._bar.close()
