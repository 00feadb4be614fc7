"""A callback that stops a fit part-way, as Ctrl-C would, for the tests of resuming."""
from __future__ import annotations

import keras


class StopAtEpoch(keras.callbacks.Callback):
    """Raises ``KeyboardInterrupt(label)`` as epoch ``at`` (0-based) of a fit begins."""

    def __init__(self, at: int, label: str = ""):
        super().__init__()
        self.at, self.label = at, label

    def on_epoch_begin(self, epoch, logs=None):
        if epoch == self.at:
            raise KeyboardInterrupt(self.label)
