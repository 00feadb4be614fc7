"""Input checks shared by the metrics.

Every public metric validates its arguments before doing any work and raises a
``ValueError`` that names the offending argument.

Constant factors, one rule for every metric: a factor that holds a single value over
the rows a metric evaluates (all rows; for R^4_c the rows where the factor is active)
carries no information to recover. It is left out of the mean over factors, reported
as NaN wherever a metric returns per-factor values, and a metric raises ``ValueError``
when every factor is constant (see :func:`constant_columns`).
"""
from __future__ import annotations

import numbers

import numpy as np

# the one converter of random_state and the integer check of all three packages
from hier_datasets.validation import check_forwarded_options, check_positive_int, check_random_state  # noqa: F401  (re-exported)

#: integer-valued columns with at most this many distinct values count as categorical
#: when ``categorical="auto"`` (the threshold of Ross & Doshi-Velez's implementation)
MAX_AUTO_CATEGORIES = 10


def check_array(x, name: str, *, min_rows: int = 2, dtype=np.float64, examples: bool = True) -> np.ndarray:
    """``x`` as a finite 2-D float array with at least ``min_rows`` rows and one column;
    with ``examples`` (rows are examples) also no more columns than rows: more would be
    a transposed ``(variables, examples)`` matrix, disentanglement_lib's layout."""
    try:
        arr = np.asarray(x, dtype=dtype)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a numeric array, got {type(x).__name__}: {err}") from None
    if arr.ndim != 2:
        raise ValueError(
            f"{name} must be a 2-D array (rows = examples, columns = variables), got {arr.ndim}-D "
            f"shape {arr.shape}; reshape a single variable with x.reshape(-1, 1)"
        )
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"{name} is empty (shape {arr.shape})")
    if arr.shape[0] < min_rows:
        raise ValueError(f"{name} needs at least {min_rows} rows (examples), got {arr.shape[0]}")
    if examples and arr.shape[1] > arr.shape[0]:
        raise ValueError(
            f"{name} has more columns ({arr.shape[1]}) than rows ({arr.shape[0]}): rows must be examples and "
            f"columns variables; did you pass its transpose? (disentanglement_lib's matrices are (variables, "
            f"examples): use {name}.T)"
        )
    if not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))[0]
        raise ValueError(f"{name} contains NaN or infinite values (first at row {bad[0]}, column {bad[1]})")
    return arr


def check_representation(function, other, usage: str) -> None:
    """A callable ``representation_function``; when it is not but ``other`` (the other
    positional argument) is, the error says the two look swapped and shows ``usage``."""
    if callable(function):
        return
    hint = f"; the two arguments look swapped: the call is {usage}" if callable(other) else ""
    raise TypeError(f"representation_function must be callable, got {type(function).__name__}{hint}")


def check_mask(mask, name: str, shape: tuple[int, int]) -> np.ndarray:
    """A boolean (n, k) mask of exactly ``shape``."""
    arr = np.asarray(mask)
    if arr.shape != shape:
        raise ValueError(f"{name} must have shape {shape} (one flag per example and variable), got {arr.shape}")
    if arr.dtype != bool:
        if not np.issubdtype(arr.dtype, np.number) or not np.all(np.isin(arr, (0, 1))):
            raise ValueError(f"{name} must be boolean (or 0/1), got dtype {arr.dtype}")
        arr = arr.astype(bool)
    return arr


def constant_columns(values: np.ndarray, active: np.ndarray | None = None) -> np.ndarray:
    """Boolean mask of the columns that hold a single value over the evaluated rows.

    Without ``active`` every row is evaluated; with an (n, k) boolean ``active`` column
    j is evaluated on the rows where ``active[:, j]`` holds, and a column with no such
    row counts as constant.
    """
    if active is None:
        cols = np.ascontiguousarray(values.T)  # reducing along rows of a wide array is slow
        return cols.max(axis=1) == cols.min(axis=1)
    out = np.ones(values.shape[1], dtype=bool)
    for j in range(values.shape[1]):
        col = values[active[:, j], j]
        out[j] = col.size == 0 or bool(np.all(col == col[0]))
    return out


def check_not_all_constant(constant: np.ndarray, name: str = "factors", where: str = "") -> None:
    """ValueError when every column is constant (``constant`` from :func:`constant_columns`)."""
    if constant.all():
        raise ValueError(
            f"every column of {name} is constant{where}, so there is no information to recover; "
            f"a constant factor is left out of the scores, and at least one must vary"
        )


def check_same_rows(**arrays) -> int:
    """The common number of rows of the named arrays."""
    rows = {name: np.shape(a)[0] for name, a in arrays.items()}
    if len(set(rows.values())) > 1:
        detail = ", ".join(f"{name} has {n}" for name, n in rows.items())
        raise ValueError(f"arguments must have the same number of rows (examples): {detail}")
    return next(iter(rows.values()))


def check_fraction(value, name: str) -> float:
    if not isinstance(value, numbers.Real) or not 0 < value < 1:
        raise ValueError(f"{name} must be a number strictly between 0 and 1, got {value!r}")
    return float(value)


def resolve_categorical(values: np.ndarray, categorical, name: str, *, active=None) -> np.ndarray:
    """Boolean mask of the categorical columns of ``values``.

    ``categorical`` is ``"auto"`` (integer-valued columns with at most
    ``MAX_AUTO_CATEGORIES`` distinct values, looking only at ``active`` entries when
    given), a boolean mask, a sequence of column indices, or an object with an
    ``is_categorical`` mask (a ``Hierarchy``). Categorical columns must hold
    non-negative integers.
    """
    k = values.shape[1]
    if isinstance(categorical, str):
        if categorical != "auto":
            raise ValueError(f"categorical must be 'auto', a boolean mask or column indices, got {categorical!r}")
        mask = np.zeros(k, dtype=bool)
        for j in range(k):
            col = values[:, j] if active is None else values[active[:, j], j]
            if col.size and np.all(col == np.round(col)) and np.all(col >= 0):
                mask[j] = np.unique(col).size <= MAX_AUTO_CATEGORIES
        return mask
    if hasattr(categorical, "is_categorical"):
        categorical = np.asarray(categorical.is_categorical)
    arr = np.asarray(categorical)
    if arr.dtype == bool:
        if arr.shape != (k,):
            raise ValueError(f"categorical mask must have one flag per column of {name} ({k}), got shape {arr.shape}")
        mask = arr.copy()
    else:
        if arr.ndim != 1 or (arr.size and not np.issubdtype(arr.dtype, np.integer)):
            raise ValueError(f"categorical must be 'auto', a boolean mask or column indices, got {categorical!r}")
        if arr.size and (arr.min() < -k or arr.max() >= k):
            raise ValueError(f"categorical column indices must be in [0, {k}) for {name}, got {arr.tolist()}")
        mask = np.zeros(k, dtype=bool)
        mask[arr.astype(np.int64)] = True
    for j in np.flatnonzero(mask):
        col = values[:, j]
        if not np.all(col == np.round(col)) or np.any(col < 0):
            raise ValueError(
                f"{name} column {j} is marked categorical but holds values other than non-negative integers"
            )
    return mask
