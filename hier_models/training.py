"""Training a model on numpy arrays with the paper's schedule.

- :func:`training_dataset`: a batched, shuffled ``tf.data`` pipeline over arrays,
  integer images scaled to [0, 1] (:func:`input_scale`);
- :func:`paper_learning_rate`: Adam's learning rate in Ross & Doshi-Velez (2021),
  appendix A.1: 1e-3, divided by 10 at 50% and by 100 at 75% of the steps;
- :func:`fit_paper_schedule`: compile and fit any model of this package with it, and
  with a :class:`ResumableFit` continue a fit that was stopped, as if it never had;
- :func:`encode`: the codes of arrays of observations, as stored.

Every model of the package trains this way on non-Boxhead data (the Boxhead
protocol is :mod:`hier_models.protocols`), the whole hierarchical method included
(:mod:`hier_models.hierarchical`).
"""
from __future__ import annotations

import json
import math
import os
import shutil
import time
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from hier_datasets.validation import check_seed
from hier_models.halving_checkpoint import check_identity, digest

__all__ = ["ITERATORS_PER_EPOCH", "STEPS_PER_EXECUTION", "ResumableFit", "advance_shuffling", "encode",
           "fit_paper_schedule", "input_scale", "paper_learning_rate", "training_dataset"]

#: iterators Keras 3's ``fit`` opens on a dataset of known length per epoch: one as the
#: epoch starts and one when its batches run out (``keras.src.trainers.epoch_iterator``);
#: each new iterator draws the next order of a seeded ``shuffle``
ITERATORS_PER_EPOCH = 2

#: training steps per traced call (Keras's ``steps_per_execution``) in every fit of this
#: module and of :mod:`hier_models.hierarchical`: the per-call overhead is paid once per
#: this many steps, and the weights are the same, bit for bit, as with one step per call
#: (``tests/test_reproducibility.py``; timed in ``benchmarks/steps_per_execution.py``)
STEPS_PER_EXECUTION = 32


def paper_learning_rate(total_steps: int, initial: float = 1e-3):
    """1e-3, divided by 10 at 50% and by 100 at 75% of ``total_steps``."""
    if total_steps < 4:
        return initial
    bounds = [int(total_steps * 0.5), int(total_steps * 0.75)]
    return keras.optimizers.schedules.PiecewiseConstantDecay(bounds, [initial, initial / 10, initial / 100])


def input_scale(observations, scale: float | None = None) -> float | None:
    """The factor that maps ``observations`` to the models' float input in [0, 1]:
    ``scale`` as given, or None (used as they are) for float observations.

    Integer observations are images as stored and need their dataset's scale,
    ``1 / observation_max`` from its metadata (:func:`hier_models.data.observation_scale`
    for a TFDS build, ``1 / ground_truth.observation_max`` for a generator): 1 for
    Spaceshapes' 0/1 pixels, 1/255 for Boxhead's 0..255 colours. Nothing is guessed
    from the values; pass floats in [0, 1] instead, if you like.
    """
    dtype = np.asarray(observations).dtype
    if scale is None:
        if np.issubdtype(dtype, np.integer):
            raise TypeError(
                f"observations are {dtype} (images as stored): pass scale=1/observation_max from the dataset's "
                "metadata (1 for Spaceshapes' 0/1 pixels, 1/255 for 0..255 colours), or float observations in [0, 1]"
            )
        return None
    if isinstance(scale, bool) or not isinstance(scale, (int, float, np.integer, np.floating)):
        raise TypeError(f"scale must be a number or None, got {type(scale).__name__}")
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be a positive finite number, got {scale!r}")
    return float(scale)


def training_dataset(observations, targets=None, batch_size: int = 256, random_state: int = 0, shuffle: bool = True,
                     *, scale: float | None = None):
    """A batched, prefetched ``tf.data`` pipeline over numpy arrays.

    Observations become float32, multiplied by ``scale`` when given (required for
    integer images; see :func:`input_scale`); ``targets`` (if any) are paired with
    them; shuffling is reseeded every epoch from ``random_state`` (an integer seed or
    a numpy Generator).
    """
    x = np.asarray(observations)
    factor = input_scale(x, scale)
    parts = (x,) if targets is None else (x, targets.astype(np.float32))
    ds = tf.data.Dataset.from_tensor_slices(parts)
    if shuffle:
        ds = ds.shuffle(min(len(x), 100_000), seed=check_seed(random_state), reshuffle_each_iteration=True)

    def to_float(x, *rest):
        x = tf.cast(x, tf.float32)
        x = x if factor is None else x * factor
        return (x, *rest) if rest else x

    ds = ds.batch(batch_size).map(to_float, num_parallel_calls=tf.data.AUTOTUNE)
    return ds.prefetch(tf.data.AUTOTUNE)


def advance_shuffling(dataset, epochs: int):
    """``dataset`` (seeded ``shuffle`` with ``reshuffle_each_iteration``) moved on to the
    data order that ``fit`` would use for epoch ``epochs`` (0-based)."""
    for _ in range(ITERATORS_PER_EPOCH * epochs):
        iter(dataset)
    return dataset


class ResumableFit(keras.callbacks.BackupAndRestore):
    """Keras's ``BackupAndRestore`` for :func:`fit_paper_schedule`: at each epoch's end
    the model's weights, its optimisers' states (the step count included, so the
    learning-rate schedule and per-step draws continue) and the epoch are saved in
    ``folder``; a later fit with a callback on the same folder starts there, and the
    folder is removed when a fit finishes (unless ``remove_when_done`` is False: then
    the caller keeps it until it has kept what the fit made, e.g. through scoring, and
    calls :meth:`discard`; a fit called again on a finished folder trains no epoch).
    It also keeps what Keras's ``History`` of one fit cannot, over every fit it
    resumed: the seconds trained (:attr:`seconds`) and each epoch's logs
    (:attr:`history`). :func:`fit_paper_schedule` ties the folder
    to its fit (:meth:`claim`), so a folder saved by another fit is refused, not resumed.
    """

    def __init__(self, folder, remove_when_done: bool = True):
        super().__init__(str(folder), double_checkpoint=True, delete_checkpoint=remove_when_done)
        self.seconds: float = 0.0
        #: metric name -> its value at each epoch's end, the stopped fits' epochs first
        self.history: dict[str, list[float]] = {}
        self._restore()
        self.identity = None
        self._start = None

    def _restore(self) -> None:
        """The seconds and epochs' logs that the stopped fits saved here."""
        saved = self._state()
        self.seconds, self.history = saved.get("seconds", 0.0), saved.get("history", {})

    def claim(self, identity: dict) -> None:
        """Tie the folder to the fit that ``identity`` (a JSON-able dict) describes; a
        folder saved by a fit with another identity raises
        :class:`~hier_models.halving_checkpoint.CheckpointMismatch` (a ``ValueError``)
        naming what differs."""
        self.identity = json.loads(json.dumps(identity, default=str))
        saved = self._state().get("identity")
        if saved is not None:
            check_identity(self.backup_dir, self.identity, saved, what="fit")

    def _state(self) -> dict:
        path = Path(self._training_metadata_path)
        return json.loads(path.read_text()) if path.exists() else {}

    @property
    def epochs_done(self) -> int:
        """The epochs a stopped fit finished and saved here (0 for a new folder)."""
        return self._state().get("epoch", 0)

    def on_train_begin(self, logs=None):
        super().on_train_begin(logs)
        self._restore()
        self._start = time.perf_counter()

    def _elapsed(self) -> float:
        return self.seconds + time.perf_counter() - self._start

    def on_epoch_end(self, epoch, logs=None):
        super().on_epoch_end(epoch, logs)  # the weights, then the epoch, as Keras writes them
        for key, value in (logs or {}).items():
            self.history.setdefault(key, []).append(float(value))
        state = {**self._state(), "seconds": self._elapsed(), "identity": self.identity, "history": self.history}
        partial = Path(f"{self._training_metadata_path}.partial")
        partial.write_text(json.dumps(state))
        os.replace(partial, self._training_metadata_path)

    def discard(self) -> None:
        """Remove the folder (once what the fit made is kept elsewhere)."""
        shutil.rmtree(self.backup_dir, ignore_errors=True)

    def on_train_end(self, logs=None):
        self.seconds = self._elapsed()
        super().on_train_end(logs)
        # Keras keeps the epoch it restored as the start of every later fit of the model
        self.model._initial_epoch = None


def fit_paper_schedule(model, observations, targets=None, *, epochs: int, batch_size: int = 256, random_state: int = 0,
                       verbose: int = 0, callbacks=None, scale: float | None = None, resume: ResumableFit | None = None,
                       **compile_options):
    """Compile ``model`` with Adam on :func:`paper_learning_rate` over all the steps of
    ``epochs`` epochs (and ``compile_options``, e.g. a ``discriminator_optimizer``) and
    fit it on :func:`training_dataset` (``scale``: see :func:`input_scale`); returns
    the History; :data:`STEPS_PER_EXECUTION` steps run per call unless
    ``compile_options`` say otherwise. ``batch_size`` is the global batch
    when ``model`` was built in a ``tf.distribute`` strategy's scope; ``random_state``
    shuffles the examples.

    With ``resume`` (a :class:`ResumableFit`), the fit saves its state at each epoch's
    end, and a fit stopped in between and called again with the same arguments and a
    callback on the same folder trains only the epochs left, on the same data order, to
    the same weights as an unbroken fit; the History then holds those epochs only. A
    folder saved by a fit with another model configuration, schedule, seed, data or
    compile options is refused (:meth:`ResumableFit.claim`)."""
    x = np.asarray(observations)
    dataset = training_dataset(x, targets, batch_size, random_state, scale=scale)
    steps = math.ceil(len(x) / batch_size) * epochs
    with model.distribute_strategy.scope():  # the optimiser beside the model's variables
        optimizer = keras.optimizers.Adam(paper_learning_rate(steps))
    model.compile(optimizer=optimizer, **{"steps_per_execution": STEPS_PER_EXECUTION, **compile_options})
    if resume is not None:
        config = {k: v for k, v in model.get_config().items() if k != "name"}  # Keras numbers unnamed models
        resume.claim({"model": type(model).__name__, "config": config, "epochs": epochs,
                      "batch_size": batch_size, "random_state": check_seed(random_state), "scale": scale,
                      "data": digest(x, *(() if targets is None else (targets,))),
                      "compile": {k: v.get_config() if hasattr(v, "get_config") else v
                                  for k, v in compile_options.items() if k != "steps_per_execution"}})
        advance_shuffling(dataset, resume.epochs_done)
        callbacks = [resume, *(callbacks or [])]
    return model.fit(dataset, epochs=epochs, verbose=verbose, callbacks=callbacks)


def encode(model, observations, scale: float | None = None, batch_size: int = 512) -> np.ndarray:
    """``model``'s codes of ``observations`` (numpy, in order); ``scale`` maps integer
    images to [0, 1] (see :func:`input_scale`)."""
    return model.encode(training_dataset(observations, None, batch_size, 0, shuffle=False, scale=scale))
