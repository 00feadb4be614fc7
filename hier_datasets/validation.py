"""Argument checks shared by the three packages (numpy only, no TensorFlow).

Randomness has one name everywhere, ``random_state`` (as in scikit-learn and
disentanglement_lib), and one converter, :func:`check_random_state`: an integer seed
or a numpy ``Generator``. A public parameter that was renamed keeps its old keyword
for a while through :func:`renamed_keywords`, which warns with a
``DeprecationWarning``.

Every check raises an error that names the argument, the value it got and what is
allowed.
"""
from __future__ import annotations

import functools
import inspect
import numbers
import warnings

import numpy as np

__all__ = [
    "check_forwarded_options", "check_non_negative_int", "check_positive_int", "check_random_state", "check_seed",
    "renamed_keywords",
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


def check_positive_int(name: str, value, *, minimum: int = 1) -> int:
    """An integer >= ``minimum`` (booleans are refused).

    Args:
      name: the argument's name, used in the error message.
      value: the value to check.
      minimum: the smallest value allowed.

    Returns:
      ``value`` as a Python ``int``.

    Raises:
      ValueError: ``value`` is not an integer (or is a boolean) or is below ``minimum``.

    Example:
      >>> check_positive_int("num_bins", 20)
      20
      >>> check_positive_int("batch_size", 1, minimum=2)
      Traceback (most recent call last):
      ...
      ValueError: batch_size must be an integer >= 2, got 1
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def check_non_negative_int(name: str, value) -> int:
    """An integer >= 0 (booleans are refused); see :func:`check_positive_int`."""
    return check_positive_int(name, value, minimum=0)


def check_forwarded_options(caller: str, options, target, passed=()) -> None:
    """TypeError naming ``caller`` when ``options`` (the ``**options`` that ``caller``
    passes on to ``target``) hold a keyword that ``target`` does not take, or one of
    ``passed``, which ``caller`` sets itself; so the error names the function the
    user called, with the keywords it takes, rather than a helper.

    Example:
      >>> def helper(x, *, bins=10, scale=1.0):
      ...     return x
      >>> try:
      ...     check_forwarded_options("summary", {"binz": 5}, helper, passed=("x",))
      ... except TypeError as err:
      ...     print(err)
      summary() got an unexpected keyword argument 'binz'; its options are bins, scale
    """
    parameters = inspect.signature(target).parameters
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    accepted = [name for name, p in parameters.items() if p.kind in kinds and name not in passed]
    unknown = [name for name in options if name not in accepted]
    if unknown:
        raise TypeError(
            f"{caller}() got an unexpected keyword argument {unknown[0]!r}; its options are {', '.join(accepted)}"
        )


def renamed_keywords(**renames: str):
    """Decorator: keep the old keywords of renamed parameters working, with a warning.

    ``@renamed_keywords(rng="random_state")`` lets callers still pass ``rng=...``: the
    value goes to ``random_state`` and a ``DeprecationWarning`` names the new keyword.
    Passing both is a ``TypeError``. The decorated function keeps its signature
    (``inspect.signature`` follows ``__wrapped__``).

    Example:
      >>> @renamed_keywords(seed="random_state")
      ... def draw(n, random_state=0):
      ...     return check_random_state(random_state).integers(10, size=n).tolist()
      >>> import warnings
      >>> with warnings.catch_warnings(record=True) as caught:
      ...     warnings.simplefilter("always")
      ...     draw(3, seed=1) == draw(3, random_state=1)
      True
      >>> print(caught[0].message)
      draw: the keyword 'seed' is deprecated, use 'random_state'
    """
    for old, new in renames.items():
        if not isinstance(new, str) or not new.isidentifier() or new == old:
            raise ValueError(f"renamed_keywords: {old}= must name the new keyword, got {new!r}")

    def decorate(func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            # a constructor inherited from a base class is named after the class called
            name = f"{type(args[0]).__name__}.__init__" if func.__name__ == "__init__" and args else func.__qualname__
            for old, new in renames.items():
                if old in kwargs:
                    if new in kwargs:
                        raise TypeError(f"{name}: pass {new}= only ({old}= is its deprecated name)")
                    warnings.warn(
                        f"{name}: the keyword {old!r} is deprecated, use {new!r}",
                        DeprecationWarning,
                        stacklevel=2,
                    )
                    kwargs[new] = kwargs.pop(old)
            return func(*args, **kwargs)

        return wrapper

    return decorate
