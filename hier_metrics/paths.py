"""Scores of a learned hierarchy and learned path assignments (Ross & Doshi-Velez 2021,
section 6.2): H-error, purity and coverage."""
from __future__ import annotations

from collections import Counter

import numpy as np

__all__ = ["h_error", "purity", "coverage"]


def _as_hierarchy(h, name: str):
    from hier_datasets.hierarchy import Hierarchy

    if isinstance(h, Hierarchy):
        return h
    if isinstance(h, (list, tuple)):
        try:
            return Hierarchy.from_reference(h)
        except (ValueError, KeyError, TypeError, AttributeError) as err:
            raise ValueError(f"{name} is not a valid reference-format hierarchy: {err}") from None
    raise ValueError(
        f"{name} must be a hier_datasets.Hierarchy or a reference-format nested list, got {type(h).__name__}"
    )


def h_error(hierarchy_a, hierarchy_b) -> int:
    """Number of paths of either hierarchy left unpaired with a path of the other.

    Every root-to-leaf path is summarised by its *signature*: the minimum downstream
    dimensionality at each node along it (``Hierarchy.path_signatures``). Paths of the
    two hierarchies are paired one-to-one when their signatures are equal; the H-error
    is the number of paths, counted over both hierarchies, that find no partner::

        H-error = sum over signatures s of |count_a(s) - count_b(s)|

    It is 0 exactly when both hierarchies have the same dimensionality structure, and
    it is unchanged by "merging up" or "pushing down" continuous dimensions.

    Args:
      hierarchy_a, hierarchy_b: ``Hierarchy`` objects (or the reference implementation's
        nested list-of-dicts format).
    """
    a = Counter(_as_hierarchy(hierarchy_a, "hierarchy_a").path_signatures)
    b = Counter(_as_hierarchy(hierarchy_b, "hierarchy_b").path_signatures)
    return int(sum(abs(a[s] - b[s]) for s in set(a) | set(b)))


def _check_labels(x, name: str) -> np.ndarray:
    arr = np.asarray(x)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of path indices, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty")
    if not np.issubdtype(arr.dtype, np.number) or arr.dtype == bool:
        raise ValueError(f"{name} must hold integer path indices, got dtype {arr.dtype}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values")
    if not np.all(arr == np.round(arr)):
        raise ValueError(f"{name} must hold integer path indices")
    return arr.astype(np.int64)


def purity(true_paths, pred_paths) -> float:
    """Size-weighted mean purity of the learned paths.

    For each learned path p^ (``pred_paths == p^``), purity is the fraction of its
    points that belong to its most common ground-truth path; the average is weighted
    by the number of points, which equals::

        purity = sum_{p^} max_p |{i: pred_i = p^, true_i = p}| / |{i: pred_i != -1}|

    Points with ``pred_paths == -1`` were discarded and are ignored (see
    :func:`coverage`). Returns 0.0 when every point was discarded.
    """
    true = _check_labels(true_paths, "true_paths")
    pred = _check_labels(pred_paths, "pred_paths")
    if true.shape != pred.shape:
        raise ValueError(f"true_paths and pred_paths must have the same length, got {true.size} and {pred.size}")
    if np.any(true < 0):
        raise ValueError("true_paths must be non-negative path indices")
    if np.any(pred < -1):
        raise ValueError("pred_paths must be path indices >= 0, or -1 for discarded points")
    kept = pred >= 0
    if not kept.any():
        return 0.0
    _, pred_ids = np.unique(pred[kept], return_inverse=True)
    _, true_ids = np.unique(true[kept], return_inverse=True)
    table = np.zeros((pred_ids.max() + 1, true_ids.max() + 1), dtype=np.int64)
    np.add.at(table, (pred_ids, true_ids), 1)
    return float(table.max(axis=1).sum() / kept.sum())


def coverage(pred_paths) -> float:
    """Fraction of points not discarded: ``mean(pred_paths != -1)``."""
    pred = _check_labels(pred_paths, "pred_paths")
    if np.any(pred < -1):
        raise ValueError("pred_paths must be path indices >= 0, or -1 for discarded points")
    return float(np.mean(pred >= 0))
