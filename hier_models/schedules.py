"""Training schedules (beta annealing, ladder fade-in) as functions of the step.

A schedule is a pure function of the number of training steps already taken. The
models keep that number in a non-trainable variable (saved with the weights), and
rebuild their schedules from their hyperparameters on load, so a reloaded model
resumes every schedule at the step where it stopped.

Schedule lengths follow the length of training. Each one (``beta_anneal_steps``,
``fade_in_steps``, ``stage_steps``) is given either as

- an ``int``: absolute steps, e.g. the 5,000 steps of the Boxhead paper (section 5), or
- a ``float`` in [0, 1]: a fraction of the model's ``training_steps``, the length of
  the whole run. ``fit`` sets it (:class:`FollowsTrainingLength`) to the steps taken
  so far plus the steps it will run, ``epochs x steps per epoch``, unless the model
  was built with ``training_steps=N`` (a custom loop, or one run over several fits).
  Until a length is known, a fraction schedule stays at its step-0 value.

``fit`` warns (``UserWarning``) when a schedule cannot complete within the run: a
lower ladder layer whose fade-in ends after the last step would be scored without
ever having reached the decoder at full weight.
"""
from __future__ import annotations

import inspect
import math
import numbers
import warnings

import keras
from keras import ops

from hier_datasets.validation import check_non_negative, check_non_negative_int, check_positive_int

__all__ = [
    "FollowsTrainingLength",
    "LinearRamp",
    "annealed_weight",
    "check_length",
    "check_weight_start",
    "fit_steps",
    "ladder_fade_in",
    "resolve_length",
]

#: the start of a ramp whose length is a fraction of a training length not yet known
_NEVER = 2**40


@keras.saving.register_keras_serializable(package="hier_models")
class LinearRamp:
    """``initial`` until step ``start``, then linear to ``final`` over ``duration`` steps.

    ``value(t) = initial + (final - initial) * clip((t - start) / duration, 0, 1)``;
    with ``duration=0`` the value jumps to ``final`` at step ``start``. ``t`` is the
    number of steps taken before the current one (0 on the first step).
    """

    def __init__(self, start: int = 0, duration: int = 0, initial: float = 0.0, final: float = 1.0):
        self.start = check_non_negative_int(start, "start")
        self.duration = check_non_negative_int(duration, "duration")
        self.initial = float(initial)
        self.final = float(final)

    @property
    def end(self) -> int:
        """The first step at which the ramp holds ``final``."""
        return self.start + self.duration

    def fraction(self, step):
        """The ramp's progress in [0, 1] at ``step`` (a number or a tensor)."""
        t = ops.cast(step, "float32") - float(self.start)
        if self.duration == 0:
            return ops.cast(t >= 0, "float32")
        return ops.clip(t / float(self.duration), 0.0, 1.0)

    def __call__(self, step):
        return self.initial + (self.final - self.initial) * self.fraction(step)

    def get_config(self) -> dict:
        return {"start": self.start, "duration": self.duration, "initial": self.initial, "final": self.final}

    @classmethod
    def from_config(cls, config: dict) -> "LinearRamp":
        return cls(**config)

    def __repr__(self) -> str:
        return f"LinearRamp(start={self.start}, duration={self.duration}, initial={self.initial}, final={self.final})"


def check_length(name: str, value):
    """A schedule length: an ``int`` >= 0 (steps) or a ``float`` in [0, 1] (a fraction
    of the training length); ValueError naming ``name`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be whole steps (an int >= 0) or a fraction of training (a float in [0, 1]), "
                         f"got {value!r}")
    if isinstance(value, numbers.Integral):
        return check_non_negative_int(value, name)
    value = float(value)
    if not (0.0 <= value <= 1.0):
        raise ValueError(f"{name} must be whole steps (an int >= 0) or a fraction of training (a float in [0, 1]), "
                         f"got {value!r}; write {int(value) if value.is_integer() else value!r} steps as an int")
    return value


def resolve_length(value, training_steps: int | None) -> int | None:
    """Steps of a length from :func:`check_length`: an int as it is, a fraction
    ``round(value * training_steps)``, None for a fraction while the length is unknown."""
    if isinstance(value, int):
        return value
    if training_steps is None:
        return None
    return int(round(value * training_steps))


def ladder_fade_in(num_layers: int, fade_in_steps: int, stage_steps: int | None = None) -> list[LinearRamp]:
    """Fade-in ramps (alpha 0 -> 1) of the layers below the top of a progressive ladder.

    Returns one ramp per layer ``l = 1 .. L-1`` (index ``l - 1``; layer L is the top).
    Layer ``L - s`` starts fading in at step ``s * stage_steps`` and reaches alpha 1
    ``fade_in_steps`` later; ``stage_steps`` defaults to ``fade_in_steps``, so with
    5,000 steps (the Boxhead paper's) layer L-1 fades in over steps 5,000-10,000 and
    layer L-2 over 10,000-15,000, while the top layer trains alone first.
    """
    fade_in_steps = check_non_negative_int(fade_in_steps, "fade_in_steps")
    stage = fade_in_steps if stage_steps is None else check_non_negative_int(stage_steps, "stage_steps")
    return [LinearRamp(start=(num_layers - layer) * stage, duration=fade_in_steps) for layer in range(1, num_layers)]


def annealed_weight(weight: float, anneal_steps: int | None, name: str = "beta", start: float = 0.0) -> LinearRamp:
    """``weight`` reached linearly from ``start`` over the first ``anneal_steps`` steps.

    ``w_t = start + (weight - start) * min(1, t / anneal_steps)``: with ``start=0`` a
    warm-up of the weight, with ``start > weight`` the annealing of a capacity
    constraint from strong to weak (Burgess et al. 2018, section 4; the Boxhead paper,
    section 5). ``anneal_steps=0``: constant ``weight``; None: a length not yet known,
    the weight stays at ``start``.
    """
    weight = check_non_negative(weight, name)
    start = check_non_negative(start, f"{name}_start")
    if anneal_steps is None:
        return LinearRamp(start=_NEVER, duration=1, initial=start, final=weight)
    anneal_steps = check_non_negative_int(anneal_steps, f"{name}_anneal_steps")
    return LinearRamp(start=0, duration=anneal_steps, initial=start, final=weight)


def check_weight_start(name: str, start, anneal_steps):
    """The start value of an annealed weight (``beta_start``): None (a warm-up from 0)
    or a finite number >= 0 with a non-zero annealing length; ValueError naming ``name``
    otherwise (with ``anneal_steps`` 0 the weight is constant and a start value would be
    silently ignored)."""
    if start is None:
        return None
    start = check_non_negative(start, name)
    anneal_name = name.replace("_start", "_anneal_steps")
    if anneal_steps == 0:
        raise ValueError(
            f"{name}={start:g} needs {anneal_name} > 0 (with {anneal_name}=0 the weight is constant); "
            f"give {anneal_name}, or leave {name}=None"
        )
    return start


def _never_ramps(count: int) -> list[LinearRamp]:
    return [LinearRamp(start=_NEVER, duration=1) for _ in range(count)]


_FIT_PARAMETERS = inspect.signature(keras.Model.fit).parameters


def fit_steps(x=None, *, batch_size=None, epochs=1, initial_epoch=0, steps_per_epoch=None, validation_split=0.0):
    """Optimiser steps that ``keras.Model.fit`` will run with these arguments, or None
    when the data's length is unknown (an endless or unsized dataset without
    ``steps_per_epoch``).

    ``(epochs - initial_epoch) x steps per epoch``: ``steps_per_epoch`` if given, else
    the cardinality of a ``tf.data.Dataset``, ``len()`` of a ``keras.utils.PyDataset``,
    or ``ceil(rows / batch_size)`` of arrays (batch 32 by default, less the
    ``validation_split`` rows held out).
    """
    epochs_run = max(0, int(epochs) - int(initial_epoch))
    if steps_per_epoch is not None:
        return epochs_run * check_positive_int(steps_per_epoch, "steps_per_epoch")
    import tensorflow as tf

    if isinstance(x, tf.data.Dataset):
        card = int(x.cardinality().numpy())
        return None if card < 0 else epochs_run * card
    if isinstance(x, dict):
        x = next(iter(x.values()), None)
    elif isinstance(x, (list, tuple)) and x and not isinstance(x[0], numbers.Number):
        x = x[0]
    if hasattr(x, "shape") and getattr(x, "shape", None) is not None and len(x.shape) > 0:
        rows = int(x.shape[0])
        if validation_split:
            rows = int(math.floor(rows * (1.0 - float(validation_split))))
        return epochs_run * math.ceil(rows / int(batch_size or 32))
    if hasattr(x, "__len__"):
        try:
            return epochs_run * len(x)
        except TypeError:
            return None
    return None


class FollowsTrainingLength:
    """Mixin of the models with schedules: ``fit`` sets the training length that
    fraction schedules refer to, and warns about schedules that cannot complete.

    A model using it implements ``_schedule_lengths()`` (name -> length as given),
    ``_build_schedules()`` (rebuild the ramps from ``self.training_steps``) and
    ``_schedule_ends()`` (description -> last step of each ramp, None while unknown).
    """

    def _init_training_length(self, training_steps):
        self.training_steps = None if training_steps is None else check_positive_int(training_steps, "training_steps")
        self._fixed_length = self.training_steps is not None
        self._config["training_steps"] = self.training_steps

    @property
    def follows_training_length(self) -> bool:
        """Whether a schedule length is a fraction of the training length."""
        return any(isinstance(v, float) for v in self._schedule_lengths().values())

    def _schedule_lengths(self) -> dict:
        raise NotImplementedError

    def _build_schedules(self) -> None:
        raise NotImplementedError

    def _schedule_ends(self) -> dict:
        raise NotImplementedError

    def set_training_steps(self, training_steps: int) -> None:
        """Set the training length that fraction schedules refer to (``fit`` calls it)."""
        training_steps = check_positive_int(training_steps, "training_steps")
        if training_steps == self.training_steps:
            return
        self.training_steps = training_steps
        self._config["training_steps"] = training_steps
        self._build_schedules()
        # the compiled train / test / inference graphs hold the old schedule's constants
        self.train_function = self.test_function = self.predict_function = None
        self._graphs.clear()

    def _check_schedules_complete(self, last_step: int) -> None:
        late = {what: end for what, end in self._schedule_ends().items() if end is not None and end > last_step}
        if late:
            listed = "; ".join(f"{what} ends at step {end}" for what, end in late.items())
            warnings.warn(
                f"{type(self).__name__}: the training run ends at step {last_step} but {listed}; the schedule "
                "cannot complete. Give schedule lengths as fractions of training (floats in [0, 1]), shorter "
                "lengths, or train longer",
                UserWarning,
                stacklevel=3,
            )

    def fit(self, x=None, y=None, *args, **kwargs):
        """As ``keras.Model.fit``; first sets the training length (steps so far plus
        the steps this fit runs) for schedules given as fractions, and warns about a
        schedule that cannot complete within the run."""
        bound = dict(zip(list(_FIT_PARAMETERS)[3:], args))
        bound.update(kwargs)
        steps = fit_steps(
            x,
            batch_size=bound.get("batch_size"),
            epochs=bound.get("epochs", 1),
            initial_epoch=bound.get("initial_epoch", 0),
            steps_per_epoch=bound.get("steps_per_epoch"),
            validation_split=bound.get("validation_split", 0.0),
        )
        last = None if steps is None else self.step + steps
        if self.follows_training_length and not self._fixed_length:
            if last is None:
                raise ValueError(
                    f"{type(self).__name__} has schedules given as fractions of training "
                    f"({', '.join(k for k, v in self._schedule_lengths().items() if isinstance(v, float))}), but "
                    "fit cannot tell how many steps it will run: pass steps_per_epoch, a dataset of known length, "
                    "or training_steps= to the model"
                )
            self.set_training_steps(max(1, last))
        if last is not None:
            self._check_schedules_complete(last)
        return super().fit(x, y, *args, **kwargs)

    def train_step(self, data):
        if self.follows_training_length and self.training_steps is None:
            raise ValueError(
                f"{type(self).__name__} has schedules given as fractions of training but no training length: train "
                "with fit, or pass training_steps= to the model"
            )
        return super().train_step(data)
