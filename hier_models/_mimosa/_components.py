"""Manifold components: contagion growth, edge points, merging along shared edges."""
from __future__ import annotations

from typing import Callable

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from hier_models._mimosa._geometry import edge_mask, make_tree, tangent_similarity
from hier_models._mimosa._progress import progress


def similar_neighbors(
    bases: np.ndarray, dims: np.ndarray, neighbors: np.ndarray, cos_simil_thresh: float
) -> np.ndarray:
    """(n, k) bool: whether point i and its j-th neighbour have similar tangent planes."""
    n, k = neighbors.shape
    rows = np.repeat(np.arange(n), k)
    sim = tangent_similarity(bases, dims, rows, neighbors.ravel())
    return (sim >= cos_simil_thresh).reshape(n, k)


def _next_uncovered(labels: np.ndarray, candidates: np.ndarray, pos: int, window: int = 4096) -> int:
    """Position in ``candidates`` (from ``pos`` on) of the first unlabelled point, or -1."""
    while pos < candidates.size:
        free = np.flatnonzero(labels[candidates[pos : pos + window]] < 0)
        if free.size:
            return pos + int(free[0])
        pos += window
    return -1


def grow_components(
    neighbors: np.ndarray, similar: np.ndarray, contagion_num: int, verbose: bool = False
) -> np.ndarray:
    """Partition the points into components by contagion (Algorithm 5).

    Seeds are taken in index order among the points not yet in a component. A
    component starts as the seed and its similar, still free neighbours; a free point
    then joins once at least ``contagion_num`` members list it among their neighbours
    with a similar tangent plane. Growth runs in rounds over the members added in the
    previous round, each round one set of array operations; the result equals
    adding points one at a time, because a point's count only grows.

    Returns one component id per point (ids in order of creation). Points with no
    similar neighbour in either direction are singletons and get ids after the rest.
    """
    n, k = neighbors.shape
    labels = np.full(n, -1, dtype=np.int64)
    counts = np.zeros(n, dtype=np.int64)
    others = similar.copy()
    others[:, 0] = False  # column 0 is the point itself
    in_degree = np.bincount(neighbors[others], minlength=n)
    isolated = ~others.any(axis=1) & (in_degree == 0)
    candidates = np.flatnonzero(~isolated)

    next_id = 0
    pos = 0
    with progress(total=n, verbose=verbose, desc="components", unit="pt") as bar:
        while True:
            pos = _next_uncovered(labels, candidates, pos)
            if pos < 0:
                break
            seed = candidates[pos]
            first = neighbors[seed][similar[seed]]
            first = first[labels[first] < 0]
            labels[first] = next_id
            size = first.size
            frontier = first
            touched = []
            while frontier.size:
                reached = neighbors[frontier][similar[frontier]]
                reached = reached[labels[reached] < 0]
                if not reached.size:
                    break
                pts, hits = np.unique(reached, return_counts=True)
                counts[pts] += hits
                touched.append(pts)
                frontier = pts[counts[pts] >= contagion_num]
                labels[frontier] = next_id
                size += frontier.size
            if touched:
                counts[np.concatenate(touched)] = 0
            next_id += 1
            bar.update(size)
        lone = np.flatnonzero(isolated)
        labels[lone] = next_id + np.arange(lone.size)
        bar.update(lone.size)
    return labels


def members_of(labels: np.ndarray, num: int | None = None) -> list[np.ndarray]:
    """Point indices (ascending) of each component id ``0..num-1``; -1 labels are skipped."""
    if num is None:
        num = int(labels.max()) + 1 if labels.size else 0
    keep = np.flatnonzero(labels >= 0)
    order = keep[np.argsort(labels[keep], kind="stable")]
    bounds = np.searchsorted(labels[order], np.arange(num + 1))
    return [order[bounds[c] : bounds[c + 1]] for c in range(num)]


def component_edges(
    codes: np.ndarray,
    bases: np.ndarray,
    dims: np.ndarray,
    members: list[np.ndarray],
    neighbors: np.ndarray,
    verbose: bool = False,
    tree: str = "ball",
) -> list[np.ndarray]:
    """Edge points of each component (global indices).

    Within a component, each point's ``k`` nearest members (``k`` = the width of
    ``neighbors``, or all members if fewer) are projected onto the point's own tangent
    directions; the point is an edge when it is not inside their convex hull
    (:func:`edge_mask`). A point whose global neighbour list (``neighbors``, itself
    first) lies wholly inside its component keeps that list, which is then exactly its
    nearest members; only the others are queried again in a tree of the component.
    """
    n, K = neighbors.shape
    label = np.full(n, -1, dtype=np.int64)
    for c, pts in enumerate(members):
        label[pts] = c
    edges = []
    for c, pts in enumerate(progress(members, verbose, "edges", unit="component")):
        d = int(dims[pts[0]])
        if pts.size <= 2:
            edges.append(pts.copy())
            continue
        k = min(K, pts.size)
        near = np.empty((pts.size, k - 1), dtype=np.int64)
        inside = np.zeros(pts.size, dtype=bool)
        if k == K:
            inside = np.all(label[neighbors[pts]] == c, axis=1)
            near[inside] = neighbors[pts[inside], 1:]
        if not inside.all():
            rest = ~inside
            # column 0 is the point itself, or a duplicate at the same place
            found = make_tree(codes[pts], tree).query(codes[pts[rest]], k=k, return_distance=False)
            near[rest] = pts[found[:, 1:]]
        rel = codes[near] - codes[pts][:, None, :]
        coords = rel @ bases[pts, :d].transpose(0, 2, 1)
        edges.append(pts[edge_mask(coords)])
    return edges


def edge_overlap(
    codes: np.ndarray,
    bases: np.ndarray,
    dims: np.ndarray,
    comp_dims: np.ndarray,
    edges: list[np.ndarray],
    cos_simil_thresh: float,
    verbose: bool = False,
    tree: str = "ball",
) -> np.ndarray:
    """(C, C) matrix M: M[i, j] is the fraction of component i's edge points whose
    nearest edge point of component j (Euclidean, in code space) has a similar tangent
    plane. Zero for different dimensionalities, on the diagonal, and for components
    without edges."""
    C = len(edges)
    M = np.zeros((C, C))
    n_edges = np.array([e.size for e in edges], dtype=np.float64)
    for d in np.unique(comp_dims):
        group = np.flatnonzero(comp_dims == d)
        if group.size < 2:
            continue
        pts = np.concatenate([edges[c] for c in group])
        owner = np.repeat(group, [edges[c].size for c in group])
        for j in progress(group, verbose, f"edge overlap ({d}-D)", unit="component"):
            if edges[j].size == 0:
                continue
            rest = owner != j
            if not rest.any():
                continue
            nearest = make_tree(codes[edges[j]], tree).query(codes[pts[rest]], k=1, return_distance=False)[:, 0]
            ok = tangent_similarity(bases, dims, pts[rest], edges[j][nearest]) >= cos_simil_thresh
            hits = np.bincount(owner[rest], weights=ok, minlength=C)
            M[:, j] = np.divide(hits, n_edges, out=np.zeros(C), where=n_edges > 0)
    np.fill_diagonal(M, 0.0)
    return M


def merge_components(
    M: np.ndarray, comp_dims: np.ndarray, min_common_edge_frac: Callable[[int], float]
) -> np.ndarray:
    """Group ids after merging every equal-dimensional pair with (M + M^T) / 2 at or
    above ``min_common_edge_frac(d)``, transitively. Returns one id per component."""
    C = len(comp_dims)
    if C == 0:
        return np.zeros(0, dtype=np.int64)
    sym = 0.5 * (M + M.T)
    needed = np.array([min_common_edge_frac(int(d)) for d in comp_dims])
    link = (sym >= needed[:, None]) & (comp_dims[:, None] == comp_dims[None, :])
    np.fill_diagonal(link, False)
    i, j = np.nonzero(link)
    graph = coo_matrix((np.ones(i.size), (i, j)), shape=(C, C))
    _, groups = connected_components(graph, directed=False)
    return groups.astype(np.int64)
