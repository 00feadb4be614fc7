"""Argument checks shared by the three packages (numpy only, no TensorFlow).

One convention, as in scikit-learn: the value first, then its name
(``check_positive_int(value, "batch_size")``). Randomness has one name everywhere,
``random_state`` (as in scikit-learn and disentanglement_lib), and one converter,
:func:`check_random_state`: an integer seed or a numpy ``Generator``. The array
checks of the metrics live beside them in ``hier_metrics._validation``.

Every check raises an error that names the argument, the value it got and what is
allowed, so that a bad hyperparameter fails at construction time rather than as an
obscure shape error inside ``fit``.
"""
from __future__ import annotations

import difflib
import functools
import inspect
import math
import numbers
import sys

import numpy as np

__all__ = [
    "check_choice", "check_forwarded_options", "check_input_shape", "check_non_negative", "check_non_negative_int",
    "check_positive", "check_positive_int", "check_random_state", "check_seed", "check_units",
]


def check_random_state(random_state, name: str = "random_state") -> np.random.Generator:
    """A numpy ``Generator`` from an integer seed or a ``Generator``.

    A ``Generator`` is returned as is (so successive calls consume its stream); an
    integer seed ``s >= 0`` gives ``np.random.default_rng(s)``. ``None`` is refused:
    every random draw flows from an explicit seed.

    Args:
      random_state: an integer seed >= 0 or a ``numpy.random.Generator``.
      name: the argument's name, used in error messages.

    Returns:
      A ``numpy.random.Generator``.

    Raises:
      TypeError: ``random_state`` is neither an integer nor a ``Generator`` (booleans
        and ``None`` included).
      ValueError: a negative integer seed.

    Example:
      >>> rng = check_random_state(0)
      >>> float(rng.random()) == float(np.random.default_rng(0).random())
      True
      >>> check_random_state(rng) is rng
      True
      >>> check_random_state(-1)
      Traceback (most recent call last):
      ...
      ValueError: random_state must be an integer seed >= 0 or a numpy Generator, got -1
    """
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError(f"{name} must be an integer seed >= 0 or a numpy Generator, got {random_state}")
        return np.random.default_rng(int(random_state))
    raise TypeError(
        f"{name} must be an integer seed >= 0 or a numpy Generator, got {type(random_state).__name__} "
        f"{random_state!r}"
    )


def check_seed(random_state, name: str = "random_state") -> int:
    """An integer seed, for the frameworks that take one (TensorFlow, Keras).

    Accepts what :func:`check_random_state` accepts: an integer seed >= 0 is returned
    as is, and a ``Generator`` gives one draw from ``[0, 2**31 - 1)``.

    Args:
      random_state: an integer seed >= 0 or a ``numpy.random.Generator``.
      name: the argument's name, used in error messages.

    Returns:
      A Python ``int`` in ``[0, 2**31 - 1)`` for a ``Generator``, the seed itself otherwise.

    Raises:
      TypeError: ``random_state`` is neither an integer nor a ``Generator``.
      ValueError: a negative integer seed.

    Example:
      >>> check_seed(3)
      3
      >>> check_seed(np.random.default_rng(0)) == check_seed(np.random.default_rng(0))
      True
    """
    rng = check_random_state(random_state, name)
    if isinstance(random_state, np.random.Generator):
        return int(rng.integers(2**31 - 1))
    return int(random_state)


def check_positive_int(value, name: str, *, minimum: int = 1) -> int:
    """An integer >= ``minimum`` (booleans are refused).

    Args:
      value: the value to check.
      name: the argument's name, used in the error message.
      minimum: the smallest value allowed.

    Returns:
      ``value`` as a Python ``int``.

    Raises:
      ValueError: ``value`` is not an integer (or is a boolean) or is below ``minimum``.

    Example:
      >>> check_positive_int(20, "num_bins")
      20
      >>> check_positive_int(1, "batch_size", minimum=2)
      Traceback (most recent call last):
      ...
      ValueError: batch_size must be an integer >= 2, got 1
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def check_non_negative_int(value, name: str) -> int:
    """An integer >= 0 (booleans are refused); see :func:`check_positive_int`."""
    return check_positive_int(value, name, minimum=0)


def unexpected_keyword(caller: str, keyword: str, accepted) -> TypeError:
    """The TypeError for an unknown ``keyword`` of ``caller``: the keywords it takes and
    the closest one, where Python's own message names neither."""
    close = difflib.get_close_matches(keyword, list(accepted), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return TypeError(
        f"{caller}() got an unexpected keyword argument {keyword!r}{hint}; its options are {', '.join(accepted)}"
    )


def _keywords(function, passed=()) -> list[str]:
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [n for n, p in inspect.signature(function).parameters.items() if p.kind in kinds and n not in passed]


def check_forwarded_options(caller, options, target, passed=()) -> None:
    """TypeError naming ``caller`` (the public function, or its name) when ``options``
    (the ``**options`` that it passes on to ``target``) hold a keyword that ``target``
    does not take, or one of ``passed``, which ``caller`` sets itself; the error lists
    every keyword the user may give: ``caller``'s own keyword-only ones, then
    ``target``'s.

    Example:
      >>> def helper(x, *, bins=10, scale=1.0):
      ...     return x
      >>> def summary(x, *, seed=0, **options):
      ...     check_forwarded_options(summary, options, helper, passed=("x",))
      >>> try:
      ...     summary(1, binz=5)
      ... except TypeError as err:
      ...     print(err)
      summary() got an unexpected keyword argument 'binz' (did you mean 'bins'?); its options are seed, bins, scale
    """
    own = []
    if callable(caller):
        own = [n for n, p in inspect.signature(caller).parameters.items() if p.kind is inspect.Parameter.KEYWORD_ONLY]
        caller = caller.__name__
    accepted = _keywords(target, passed)
    unknown = [name for name in options if name not in accepted]
    if unknown:
        raise unexpected_keyword(caller, unknown[0], own + [n for n in accepted if n not in own])


def keyword_checked(function):
    """``function``, answering an unknown keyword with :func:`unexpected_keyword`'s
    error before it runs; a function with ``**options`` is returned as it is (it checks
    what it forwards with :func:`check_forwarded_options`)."""
    if getattr(function, "keywords_checked", False) or any(
        p.kind is p.VAR_KEYWORD for p in inspect.signature(function).parameters.values()
    ):
        return function
    accepted = _keywords(function)

    @functools.wraps(function)
    def checked(*args, **kwargs):
        for name in kwargs:
            if name not in accepted:
                raise unexpected_keyword(function.__name__, name, accepted)
        return function(*args, **kwargs)

    checked.keywords_checked = True
    return checked


def check_public_keywords(namespace: dict) -> None:
    """Give every public function of a package (the names in ``namespace["__all__"]``)
    :func:`keyword_checked`'s errors, in the package and in the module that defines it."""
    for name in namespace["__all__"]:
        function = namespace.get(name)  # a lazily loaded name is not there yet
        if inspect.isfunction(function):
            checked = keyword_checked(function)
            namespace[name] = checked
            setattr(sys.modules[function.__module__], function.__name__, checked)


def _finite_real(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return float(value)


def check_non_negative(value, name: str) -> float:
    """A finite real number >= 0."""
    value = _finite_real(value, name)
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    return value


def check_positive(value, name: str) -> float:
    """A finite real number > 0."""
    value = _finite_real(value, name)
    if value <= 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")
    return value


def check_choice(value, name: str, choices) -> str:
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


def check_units(units, name: str) -> tuple[int, ...]:
    """A non-empty sequence of layer widths >= 1."""
    if isinstance(units, numbers.Integral) and not isinstance(units, bool):
        units = (units,)
    try:
        values = tuple(units)
    except TypeError:
        raise ValueError(f"{name} must be a sequence of positive integers, got {units!r}") from None
    if not values:
        raise ValueError(f"{name} must not be empty")
    return tuple(check_positive_int(u, f"{name}[{i}]") for i, u in enumerate(values))
