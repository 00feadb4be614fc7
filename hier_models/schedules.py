"""Training schedules (beta annealing, ladder fade-in) as functions of the step.

A schedule is a pure function of the number of training steps already taken. The
models keep that number in a non-trainable variable (saved with the weights), and
rebuild their schedules from their hyperparameters on load, so a reloaded model
resumes every schedule at the step where it stopped.
"""
from __future__ import annotations

import keras
from keras import ops

from hier_models.validation import check_non_negative, check_non_negative_int

__all__ = ["LinearRamp", "annealed_weight", "ladder_fade_in"]


@keras.saving.register_keras_serializable(package="hier_models")
class LinearRamp:
    """``initial`` until step ``start``, then linear to ``final`` over ``duration`` steps.

    ``value(t) = initial + (final - initial) * clip((t - start) / duration, 0, 1)``;
    with ``duration=0`` the value jumps to ``final`` at step ``start``. ``t`` is the
    number of steps taken before the current one (0 on the first step).
    """

    def __init__(self, start: int = 0, duration: int = 0, initial: float = 0.0, final: float = 1.0):
        self.start = check_non_negative_int("start", start)
        self.duration = check_non_negative_int("duration", duration)
        self.initial = float(initial)
        self.final = float(final)

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


def ladder_fade_in(num_layers: int, fade_in_steps: int, stage_steps: int | None = None) -> list[LinearRamp]:
    """Fade-in ramps (alpha 0 -> 1) of the layers below the top of a progressive ladder.

    Returns one ramp per layer ``l = 1 .. L-1`` (index ``l - 1``; layer L is the top).
    Layer ``L - s`` starts fading in at step ``s * stage_steps`` and reaches alpha 1
    ``fade_in_steps`` later; ``stage_steps`` defaults to ``fade_in_steps``, so with the
    defaults of 5,000 steps layer L-1 fades in over steps 5,000-10,000 and layer L-2
    over 10,000-15,000, while the top layer trains alone first.
    """
    fade_in_steps = check_non_negative_int("fade_in_steps", fade_in_steps)
    stage = fade_in_steps if stage_steps is None else check_non_negative_int("stage_steps", stage_steps)
    return [LinearRamp(start=(num_layers - layer) * stage, duration=fade_in_steps) for layer in range(1, num_layers)]


def annealed_weight(weight: float, anneal_steps: int, name: str = "beta") -> LinearRamp:
    """``weight`` reached linearly from 0 over the first ``anneal_steps`` steps (0: constant)."""
    weight = check_non_negative(name, weight)
    anneal_steps = check_non_negative_int(f"{name}_anneal_steps", anneal_steps)
    return LinearRamp(start=0, duration=anneal_steps, initial=0.0, final=weight)
