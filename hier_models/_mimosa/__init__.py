"""MIMOSA: learn a dimension hierarchy and path assignments from codes alone.

Ross & Doshi-Velez (2021), section 5 and appendix algorithms 1 and 3-7. The input is
a set of already-reduced codes (the output of a smooth, e.g. Softplus, autoencoder
with ``initial_dim`` units; see :func:`paper_settings`). The steps:

1. neighbourhoods: the ``num_nearest_neighbors`` nearest codes of every code (ball
   tree, the point itself included);
2. local SVD of every neighbourhood in one batched call, refitted on the neighbours
   within the ``ransac_frac`` reconstruction-error percentile; the local
   dimensionality is the first d whose eigenvalues explain ``eig_cumsum_thresh`` of
   the variance and drop by ``eig_decay_thresh`` from d to d + 1;
3. components grown by contagion: neighbours join when their tangent planes are
   similar (``|det(U V^T)| >= cos_simil_thresh``, 0 between different
   dimensionalities) to at least ``contagion_num`` members;
4. components smaller than ``min_size_init`` are dropped; equal-dimensional ones
   whose edge points match (fraction at least ``min_common_edge_frac(d)``) are
   merged; merged components smaller than ``min_size_merged`` are dropped;
5. a lower-dimensional component is enclosed by a higher-dimensional one when the
   mean distance of its points to the other's nearest points is at most
   ``neighbor_lengthscale_mult`` times the other's nearest-neighbour lengthscale;
   the enclosure tree (enclosing components below enclosed ones) becomes the
   dimension hierarchy, and every kept point is assigned the path of its component.

The public names are imported from :mod:`hier_models` (this subpackage is private;
``hier_models.mimosa`` is the function). Example::

    from hier_models import mimosa, paper_settings
    hierarchy, assignments = mimosa(codes)                  # Chopsticks defaults
    settings = paper_settings("spaceshapes")                # {"initial_dim": 7, "cos_simil_thresh": 0.95, ...}
    initial_dim = settings.pop("initial_dim")               # width of the smooth autoencoder before MIMOSA
    hierarchy, assignments = mimosa(codes, **settings)      # cos_simil_thresh 0.95, contagion_num 3
    print(hierarchy)              # z0 / a0 ├── none: - └── c1: z1 ...
    # assignments[i]: index of point i's path in hierarchy.path_names, -1 if discarded

:func:`fit_mimosa` returns the same plus the intermediate results (local
dimensionalities, components before and after merging, edge points, the enclosure
tree and per-step timings).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from hier_datasets.hierarchy import Hierarchy
from hier_datasets.validation import check_forwarded_options
from hier_models._mimosa._components import (
    component_edges,
    edge_overlap,
    grow_components,
    members_of,
    merge_components,
    similar_neighbors,
)
from hier_models._mimosa._geometry import TREES, local_svd, nearest_neighbors
from hier_models._mimosa._progress import Stopwatch
from hier_models._mimosa._tree import component_hierarchy, name_dimensions
from hier_models._mimosa.settings import (
    DEFAULTS,
    PAPER_SETTINGS,
    default_min_common_edge_frac,
    paper_settings,
)

__all__ = [
    "mimosa",
    "fit_mimosa",
    "MimosaResult",
    "DEFAULTS",
    "PAPER_SETTINGS",
    "paper_settings",
    "default_min_common_edge_frac",
    "name_dimensions",
    "NoHierarchyFound",
    "check_hyperparameters",
]


class NoHierarchyFound(ValueError):
    """MIMOSA ran but no component of the codes survived its size filters, so there is
    no hierarchy to return (too few points, codes not yet smooth, or size and
    similarity thresholds too strict for these data)."""


@dataclass
class MimosaResult:
    """Everything :func:`fit_mimosa` computed.

    Attributes:
      hierarchy: the learned :class:`~hier_datasets.hierarchy.Hierarchy`.
      assignments: (n,) int64, each point's path index in ``hierarchy`` order, -1 if
        discarded.
      components: (n,) int64, each point's final component, -1 if discarded.
        Component ``c`` owns path ``component_paths[c]``.
      component_dims: (C,) local dimensionality of each final component.
      component_parents: (C,) the enclosing-tree parent of each component (-1: root).
      component_paths: (C,) the path index of each component.
      local_dims: (n,) the local dimensionality estimated at each point.
      initial_components: (n,) the contagion component of each point before merging
        and size filtering.
      edges: global indices of the edge points of each component kept after the
        ``min_size_init`` filter (before merging).
      timings: seconds spent in each step.
      hyperparameters: the values used (sizes resolved to point counts).
    """

    hierarchy: Hierarchy
    assignments: np.ndarray
    components: np.ndarray
    component_dims: np.ndarray
    component_parents: np.ndarray
    component_paths: np.ndarray
    local_dims: np.ndarray
    initial_components: np.ndarray
    edges: list = field(repr=False)
    timings: dict
    hyperparameters: dict


def _check_codes(codes) -> np.ndarray:
    try:
        arr = np.asarray(codes, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"codes must be a numeric array of shape (n_points, n_dims): {err}") from None
    if arr.ndim != 2:
        raise ValueError(f"codes must be 2-D (n_points, n_dims), got shape {arr.shape}")
    if arr.shape[1] < 1:
        raise ValueError(f"codes must have at least one dimension, got shape {arr.shape}")
    bad = ~np.isfinite(arr)
    if bad.any():
        row, col = np.argwhere(bad)[0]
        raise ValueError(
            f"codes contain NaN or infinite values ({int(bad.any(axis=1).sum())} rows; "
            f"first at row {row}, column {col}: {arr[row, col]})"
        )
    return arr


def _size(value, n: int, name: str) -> int:
    """A size hyperparameter as a point count: ``ceil(value * n)`` (at least 1) for a
    fraction below 1, ``ceil(value)`` for a count."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a number (a fraction below 1 or a count), got {value!r}")
    if not value > 0 or not math.isfinite(value):
        raise ValueError(f"{name} must be positive, got {value!r}")
    if value >= 1:
        return int(math.ceil(value))
    # rounded first so that e.g. 0.0002 * 100_000 = 20.000000000000004 counts as 20
    return max(1, math.ceil(round(float(value) * n, 6)))


def _resolve(n: int, D: int, hp: dict) -> dict:
    out = dict(hp)
    k = out["num_nearest_neighbors"]
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 2:
        raise ValueError(f"num_nearest_neighbors must be an integer >= 2, got {k!r}")
    k = int(k)
    if k <= D:
        raise ValueError(
            f"num_nearest_neighbors={k} must exceed the code dimension {D} for a local SVD to see all directions"
        )
    if n < k:
        raise ValueError(f"codes has {n} points, fewer than num_nearest_neighbors={k}")
    out["num_nearest_neighbors"] = k
    for name, lo, hi in (
        ("ransac_frac", 0.0, 1.0),
        ("eig_cumsum_thresh", 0.0, 1.0),
        ("cos_simil_thresh", 0.0, 1.0),
    ):
        v = out[name]
        if not isinstance(v, (int, float, np.number)) or not lo < v <= hi:
            raise ValueError(f"{name} must be in ({lo}, {hi}], got {v!r}")
        out[name] = float(v)
    for name in ("eig_decay_thresh", "neighbor_lengthscale_mult"):
        v = out[name]
        if not isinstance(v, (int, float, np.number)) or not (v > 0 and math.isfinite(v)):
            raise ValueError(f"{name} must be a positive number, got {v!r}")
        out[name] = float(v)
    c = out["contagion_num"]
    if isinstance(c, bool) or not isinstance(c, (int, np.integer)) or not 1 <= c <= k:
        raise ValueError(f"contagion_num must be an integer in [1, num_nearest_neighbors={k}], got {c!r}")
    out["contagion_num"] = int(c)
    out["min_size_init"] = _size(out["min_size_init"], n, "min_size_init")
    out["min_size_merged"] = _size(out["min_size_merged"], n, "min_size_merged")
    if not callable(out["min_common_edge_frac"]):
        raise ValueError(f"min_common_edge_frac must be a function of the dimensionality d, got {out['min_common_edge_frac']!r}")
    return out


def fit_mimosa(
    codes,
    *,
    num_nearest_neighbors: int = DEFAULTS["num_nearest_neighbors"],
    ransac_frac: float = DEFAULTS["ransac_frac"],
    eig_cumsum_thresh: float = DEFAULTS["eig_cumsum_thresh"],
    eig_decay_thresh: float = DEFAULTS["eig_decay_thresh"],
    cos_simil_thresh: float = DEFAULTS["cos_simil_thresh"],
    contagion_num: int = DEFAULTS["contagion_num"],
    min_size_init: float = DEFAULTS["min_size_init"],
    min_size_merged: float = DEFAULTS["min_size_merged"],
    min_common_edge_frac: Callable[[int], float] = default_min_common_edge_frac,
    neighbor_lengthscale_mult: float = DEFAULTS["neighbor_lengthscale_mult"],
    tree: str = "ball",
    verbose: bool = False,
) -> MimosaResult:
    """Run MIMOSA on ``codes`` (n_points, n_dims) and keep every intermediate result.

    Hyperparameters (defaults in :data:`DEFAULTS`; paper appendix A.3):
      num_nearest_neighbors: neighbourhood size for local SVD and contagion (40);
        must exceed the code dimension and not exceed the number of points.
      ransac_frac: refit each local SVD on this fraction of best-fitting neighbours (2/3;
        1 disables the refit).
      eig_cumsum_thresh: variance the local dimensions must explain (0.95).
      eig_decay_thresh: eigenvalue ratio from dimension d to d+1 (4).
      cos_simil_thresh: tangent-plane similarity to join or merge (0.99; 0.95 for
        Spaceshapes).
      contagion_num: similar members needed before a point joins a component (5; 3 for
        Spaceshapes).
      min_size_init: drop contagion components smaller than this (0.0002 of the
        points: 20 of 100,000, 4 of 20,000); a value of at least 1 is a count.
      min_size_merged: drop merged components smaller than this (0.02 of the points);
        a value of at least 1 is a count.
      min_common_edge_frac: function d -> fraction of matching edge points needed to
        merge two d-dimensional components.
      neighbor_lengthscale_mult: enclosure ratio threshold (10).
      tree: ``"ball"`` (scikit-learn's ball tree, the paper's choice) or ``"kd"`` (its
        k-d tree) for every nearest-neighbour query. Both are exact and give the same
        neighbours; on low-dimensional codes the k-d tree is often several times faster.
      verbose: show tqdm progress bars for the long steps.

    Raises ValueError for codes that are not 2-D, contain NaN or inf, have fewer points
    than neighbours, for out-of-range hyperparameters, and :class:`NoHierarchyFound`
    (a ValueError) when no component survives the size filters.
    """
    Z = _check_codes(codes)
    n, D = Z.shape
    hp = _resolve(
        n,
        D,
        dict(
            num_nearest_neighbors=num_nearest_neighbors,
            ransac_frac=ransac_frac,
            eig_cumsum_thresh=eig_cumsum_thresh,
            eig_decay_thresh=eig_decay_thresh,
            cos_simil_thresh=cos_simil_thresh,
            contagion_num=contagion_num,
            min_size_init=min_size_init,
            min_size_merged=min_size_merged,
            min_common_edge_frac=min_common_edge_frac,
            neighbor_lengthscale_mult=neighbor_lengthscale_mult,
        ),
    )
    _check_tree(tree)
    k = hp["num_nearest_neighbors"]
    watch = Stopwatch()
    lap = watch.lap
    distances, neighbors = nearest_neighbors(Z, k, tree)
    lap("neighbors")
    bases, _, local_dims = local_svd(
        Z, neighbors, hp["ransac_frac"], hp["eig_cumsum_thresh"], hp["eig_decay_thresh"], verbose
    )
    lap("local_svd")
    similar = similar_neighbors(bases, local_dims, neighbors, hp["cos_simil_thresh"])
    lap("similarity")
    initial = grow_components(neighbors, similar, hp["contagion_num"], verbose)
    lap("build_components")

    sizes = np.bincount(initial)
    kept = np.flatnonzero(sizes >= hp["min_size_init"])
    members = members_of(initial, int(initial.max()) + 1)
    members = [members[c] for c in kept]
    comp_dims = np.array([local_dims[m[0]] for m in members], dtype=np.int64)
    edges = component_edges(Z, bases, local_dims, members, neighbors, verbose, tree)
    lap("edges")
    M = edge_overlap(Z, bases, local_dims, comp_dims, edges, hp["cos_simil_thresh"], verbose, tree)
    groups = merge_components(M, comp_dims, hp["min_common_edge_frac"])
    lap("merge_components")

    merged = np.full(n, -1, dtype=np.int64)
    for c, pts in enumerate(members):
        merged[pts] = groups[c]
    merged_sizes = np.bincount(merged[merged >= 0], minlength=int(groups.max()) + 1 if groups.size else 0)
    big = np.flatnonzero(merged_sizes >= hp["min_size_merged"])
    if big.size == 0:
        raise NoHierarchyFound(
            f"no component reached min_size_merged={hp['min_size_merged']} points "
            f"(largest merged component: {int(merged_sizes.max()) if merged_sizes.size else 0} points); "
            "lower min_size_merged or cos_simil_thresh, or raise num_nearest_neighbors"
        )
    group_dims = np.zeros(merged_sizes.size, dtype=np.int64)
    group_dims[groups] = comp_dims
    group_first = np.full(merged_sizes.size, n, dtype=np.int64)
    np.minimum.at(group_first, merged[merged >= 0], np.flatnonzero(merged >= 0))
    # canonical order: dimensionality, then size (largest first), then first point
    order = big[np.lexsort((group_first[big], -merged_sizes[big], group_dims[big]))]
    relabel = np.full(merged_sizes.size, -1, dtype=np.int64)
    relabel[order] = np.arange(order.size)
    components = np.where(merged >= 0, relabel[np.maximum(merged, 0)], -1)
    final_members = members_of(components, order.size)
    final_dims = group_dims[order]

    hierarchy, paths, parents = component_hierarchy(
        Z, final_members, final_dims, hp["neighbor_lengthscale_mult"], neighbors, distances, tree
    )
    assignments = np.where(components >= 0, paths[np.maximum(components, 0)], -1)
    lap("construct_hierarchy")

    return MimosaResult(
        hierarchy=hierarchy,
        assignments=assignments,
        components=components,
        component_dims=final_dims,
        component_parents=parents,
        component_paths=paths,
        local_dims=local_dims,
        initial_components=initial,
        edges=edges,
        timings=watch.done(),
        hyperparameters=hp,
    )


def _check_tree(tree) -> None:
    if tree not in TREES:
        raise ValueError(f"tree must be one of {sorted(TREES)}, got {tree!r}")


def check_hyperparameters(num_points: int, num_dims: int, **hyperparameters) -> dict:
    """:func:`fit_mimosa`'s checks of its hyperparameters (:data:`DEFAULTS` updated by
    ``hyperparameters``; ``tree`` and ``verbose`` too) for ``num_points`` codes of
    ``num_dims`` dimensions, without any codes: the same ValueError, before anything
    is computed. Returns them as resolved (sizes as point counts); TypeError for a
    name fit_mimosa does not take."""
    unknown = sorted(set(hyperparameters) - set(DEFAULTS) - {"tree", "verbose"})
    if unknown:
        raise TypeError(f"fit_mimosa takes no hyperparameter {', '.join(unknown)}")
    options = dict(hyperparameters)
    _check_tree(options.pop("tree", "ball"))
    options.pop("verbose", None)
    return _resolve(int(num_points), int(num_dims), {**DEFAULTS, **options})


def mimosa(codes, **hyperparameters) -> tuple[Hierarchy, np.ndarray]:
    """Learn a dimension hierarchy from ``codes`` and assign every point a path.

    Returns ``(hierarchy, assignments)``: ``assignments[i]`` is the index of point
    ``i``'s path in ``hierarchy``'s path order (``hierarchy.path_names``), or -1 when
    the point was discarded. Hyperparameters and errors as in :func:`fit_mimosa`.
    """
    check_forwarded_options(mimosa, hyperparameters, fit_mimosa, passed=("codes",))
    result = fit_mimosa(codes, **hyperparameters)
    return result.hierarchy, result.assignments
