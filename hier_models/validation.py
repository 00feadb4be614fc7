"""Argument checks shared by the models and network builders.

Every check raises ``ValueError`` with the argument's name, the value it got and
what is allowed, so that a bad hyperparameter fails at construction time rather
than as an obscure shape error inside ``fit``. Randomness is checked by
:func:`hier_datasets.validation.check_random_state`.
"""
from __future__ import annotations

import math
import numbers

# one integer check for the three packages (name first, like every check here)
from hier_datasets.validation import check_non_negative_int, check_positive_int

__all__ = [
    "check_choice",
    "check_input_shape",
    "check_non_negative",
    "check_non_negative_int",
    "check_positive",
    "check_positive_int",
    "check_units",
]


def _finite_real(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return float(value)


def check_non_negative(name: str, value) -> float:
    """A finite real number >= 0."""
    value = _finite_real(name, value)
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    return value


def check_positive(name: str, value) -> float:
    """A finite real number > 0."""
    value = _finite_real(name, value)
    if value <= 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")
    return value


def check_choice(name: str, value, choices) -> str:
    """One of ``choices``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {sorted(choices)}, got {value!r}")
    return value


def check_input_shape(input_shape) -> tuple[int, ...]:
    """The shape of one observation, without the batch axis: a tuple of ints >= 1."""
    try:
        shape = tuple(input_shape)
    except TypeError:
        raise ValueError(
            f"input_shape must be the shape of one observation, e.g. (64,) or (64, 64, 1), got {input_shape!r}"
        ) from None
    if not shape or any(isinstance(d, bool) or not isinstance(d, numbers.Integral) or d < 1 for d in shape):
        raise ValueError(
            f"input_shape must be a non-empty tuple of positive integers, e.g. (64,) or (64, 64, 1), got {input_shape!r}"
        )
    return tuple(int(d) for d in shape)


def check_units(name: str, units) -> tuple[int, ...]:
    """A non-empty sequence of layer widths >= 1."""
    if isinstance(units, numbers.Integral) and not isinstance(units, bool):
        units = (units,)
    try:
        values = tuple(units)
    except TypeError:
        raise ValueError(f"{name} must be a sequence of positive integers, got {units!r}") from None
    if not values:
        raise ValueError(f"{name} must not be empty")
    return tuple(check_positive_int(f"{name}[{i}]", u) for i, u in enumerate(values))
