"""Scores of a learned hierarchy and learned path assignments (Ross & Doshi-Velez 2021,
section 6.2): H-error, purity and coverage."""
from __future__ import annotations

from collections import Counter
from functools import lru_cache

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


def h_error(hierarchy_a, hierarchy_b, *, method: str = "paths") -> int:
    """Number of paths of either hierarchy left unpaired with a path of the other.

    Every root-to-leaf path is summarised by its *signature*: the minimum downstream
    dimensionality at each node along it (``Hierarchy.path_signatures``). Paths of the
    two hierarchies are paired one-to-one when their signatures are equal; the H-error
    is the number of paths, counted over both hierarchies, that find no partner::

        H-error = sum over signatures s of |count_a(s) - count_b(s)|

    It is 0 exactly when both hierarchies have the same dimensionality structure, and
    it is unchanged by "merging up" or "pushing down" continuous dimensions. This is
    the paper's definition (Ross & Doshi-Velez 2021, section 6.2).

    ``method="tree_edit"`` gives the variant of the authors' later code instead: each
    hierarchy becomes a tree of its groups labelled by their minimum downstream
    dimensionality, children in a canonical order, and the H-error is the unit-cost
    tree edit distance between the two trees (Zhang & Shasha 1989). Both are 0 for the
    same structure; they differ when a subtree moves or a branch is missing (a missing
    leaf group costs one node edit there but two unpaired paths, its own and the one
    its sibling no longer matches).

    Args:
      hierarchy_a, hierarchy_b: ``Hierarchy`` objects (or the reference implementation's
        nested list-of-dicts format).
      method: ``"paths"`` (default) or ``"tree_edit"``.

    Returns:
      The H-error, an int >= 0.

    Raises:
      ValueError: an argument that is neither a ``Hierarchy`` nor a valid
        reference-format list, or an unknown ``method``.

    Example:
      >>> from hier_datasets import Categorical, Group, Hierarchy
      >>> flat = Hierarchy(Group(("x",)))
      >>> split = Hierarchy(Group(("x",), Categorical("c", (("a", Group()), ("b", Group(("z",)))))))
      >>> h_error(flat, split), h_error(flat, split, method="tree_edit")
      (3, 2)
    """
    a = _as_hierarchy(hierarchy_a, "hierarchy_a")
    b = _as_hierarchy(hierarchy_b, "hierarchy_b")
    if method == "paths":
        ca, cb = Counter(a.path_signatures), Counter(b.path_signatures)
        return int(sum(abs(ca[s] - cb[s]) for s in set(ca) | set(cb)))
    if method == "tree_edit":
        return _forest_distance((_labelled_tree(a.root, 0),), (_labelled_tree(b.root, 0),))
    raise ValueError(f"method must be 'paths' or 'tree_edit', got {method!r}")


def _labelled_tree(group, above: int) -> tuple:
    """``(label, children)``: the group's minimum downstream dimensionality (dimensions
    above it included) and its option groups' trees in a canonical order."""
    below = above + len(group.continuous)
    children = () if group.categorical is None else tuple(
        sorted((_labelled_tree(child, below) for _, child in group.categorical.options), key=_tree_key)
    )
    return above + group.min_dim(), children


def _tree_key(tree: tuple) -> tuple:
    """Sorted labels of every node of a tree: the canonical order of siblings."""
    labels, stack = [], [tree]
    while stack:
        label, children = stack.pop()
        labels.append(label)
        stack.extend(children)
    return tuple(sorted(labels))


@lru_cache(maxsize=None)
def _forest_distance(f: tuple, g: tuple) -> int:
    """Unit-cost edit distance between ordered forests (tuples of ``(label, children)``),
    by the rightmost-root recursion: delete it, insert it, or match the two roots."""
    if not f or not g:
        return sum(len(_tree_key(t)) for t in f + g)
    (a, fa), (b, gb) = f[-1], g[-1]
    return min(
        _forest_distance(f[:-1] + fa, g) + 1,
        _forest_distance(f, g[:-1] + gb) + 1,
        _forest_distance(fa, gb) + _forest_distance(f[:-1], g[:-1]) + int(a != b),
    )


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
    :func:`coverage`).

    Args:
      true_paths: (n,) ground-truth path indices (>= 0).
      pred_paths: (n,) learned path indices, -1 for a discarded point.

    Returns:
      The purity in [0, 1]; 0.0 when every point was discarded.

    Raises:
      ValueError: labels of different lengths, negative true paths, or learned
        paths below -1.

    Example:
      >>> purity([0, 0, 1, 1], [5, 5, 5, 7])  # path 5 holds two of true path 0 and one of path 1
      0.75
      >>> purity([0, 1, 1], [3, -1, 4])
      1.0
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
    """Fraction of points not discarded: ``mean(pred_paths != -1)``.

    Args:
      pred_paths: (n,) learned path indices, -1 for a discarded point.

    Returns:
      The coverage in [0, 1].

    Raises:
      ValueError: labels that are not integers >= -1.

    Example:
      >>> coverage([0, -1, 1, 1])
      0.75
    """
    pred = _check_labels(pred_paths, "pred_paths")
    if np.any(pred < -1):
        raise ValueError("pred_paths must be path indices >= 0, or -1 for discarded points")
    return float(np.mean(pred >= 0))
