"""Neighbourhoods, local SVDs, tangent-plane similarity and edge tests, batched.

Every function works on whole arrays of points; the only Python loops run over
chunks (to bound memory) or over the handful of distinct local dimensionalities.
"""
from __future__ import annotations

import numpy as np
from sklearn.neighbors import BallTree, KDTree

from hier_models._mimosa._progress import progress

# Number of neighbourhoods per batched SVD call; bounds the (chunk, k, D) temporaries.
SVD_CHUNK = 8192
# Number of point pairs per batched determinant call.
PAIR_CHUNK = 131072


#: Exact nearest-neighbour structures of scikit-learn; both return the same neighbours.
TREES = {"ball": BallTree, "kd": KDTree}


def make_tree(points: np.ndarray, kind: str = "ball"):
    """A scikit-learn ball tree (``"ball"``, the paper's choice) or k-d tree (``"kd"``)."""
    return TREES[kind](points)


def nearest_neighbors(codes: np.ndarray, k: int, tree: str = "ball") -> tuple[np.ndarray, np.ndarray]:
    """(distances, indices) of the ``k`` nearest neighbours of every point, itself first.

    A ball tree (or a k-d tree, ``tree="kd"``) answers the queries. With duplicated points the query may list a
    twin before the point itself, or leave the point out; rows are reordered (or their
    farthest neighbour replaced) so that column 0 is always the point itself.
    """
    dist, idx = make_tree(codes, tree).query(codes, k=k)
    own = idx == np.arange(len(codes))[:, None]
    missing = ~own.any(axis=1)
    if missing.any():
        idx[missing, -1] = np.flatnonzero(missing)
        dist[missing, -1] = 0.0
        own[missing, -1] = True
    if not own[:, 0].all():
        order = np.argsort(~own, axis=1, kind="stable")
        idx = np.take_along_axis(idx, order, axis=1)
        dist = np.take_along_axis(dist, order, axis=1)
    return dist, idx


def _svd_basis(centred: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Squared singular values (B, D) and right singular vectors (B, D, D) of each block."""
    _, s, vt = np.linalg.svd(centred, full_matrices=False)
    return s**2, vt


def local_svd(
    codes: np.ndarray,
    neighbors: np.ndarray,
    ransac_frac: float,
    eig_cumsum_thresh: float,
    eig_decay_thresh: float,
    verbose: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Local principal directions and dimensionality of every neighbourhood.

    For each point the SVD of its centred neighbourhood is computed; with
    ``ransac_frac < 1`` each neighbour's reconstruction error is measured with
    0, 1, ..., D-1 components, the errors are combined into one norm per neighbour
    (which equals ``sqrt(sum_j (j + 1) * p_j**2)`` for the neighbour's coordinates
    ``p_j`` along the components), and the SVD is refitted on the neighbours whose
    norm is at most the ``100 * ransac_frac`` percentile. Outliers are masked with
    zero rows, which leaves the singular values and vectors of the inliers unchanged,
    so every neighbourhood stays in one batched call.

    The local dimensionality is the first ``d`` in 1..D-1 whose leading ``d``
    normalised eigenvalues sum to at least ``eig_cumsum_thresh`` and whose ``d``-th
    eigenvalue is at least ``eig_decay_thresh`` times the next one; ``D`` otherwise.

    Returns ``(bases, eigs, dims)``: ``bases[i, :dims[i]]`` are the orthonormal
    tangent directions at point ``i`` (rows, descending variance), ``eigs`` the
    normalised eigenvalues, ``dims`` the local dimensionalities.
    """
    n, k = neighbors.shape
    D = codes.shape[1]
    bases = np.empty((n, D, D))
    eigs = np.empty((n, D))
    weights = np.arange(1, D + 1, dtype=np.float64)
    starts = range(0, n, SVD_CHUNK)
    for start in progress(starts, verbose, "local SVD", unit="chunk"):
        stop = min(start + SVD_CHUNK, n)
        block = codes[neighbors[start:stop]]  # (B, k, D)
        centred = block - block.mean(axis=1, keepdims=True)
        ev, vt = _svd_basis(centred)
        if ransac_frac < 1:
            coords = centred @ vt.transpose(0, 2, 1)
            err = np.sqrt((coords**2) @ weights)
            cutoff = np.percentile(err, 100.0 * ransac_frac, axis=1, keepdims=True)
            inlier = err <= cutoff
            count = inlier.sum(axis=1, keepdims=True)
            mean = (inlier[:, None, :].astype(np.float64) @ block)[:, 0] / count
            centred = (block - mean[:, None, :]) * inlier[:, :, None]
            ev, vt = _svd_basis(centred)
        total = ev.sum(axis=1, keepdims=True)
        ratio = np.divide(ev, total, out=np.zeros_like(ev), where=total > 0)
        bases[start:stop] = vt
        eigs[start:stop] = ratio
    dims = intrinsic_dims(eigs, eig_cumsum_thresh, eig_decay_thresh)
    return bases, eigs, dims


def intrinsic_dims(eigs: np.ndarray, eig_cumsum_thresh: float, eig_decay_thresh: float) -> np.ndarray:
    """Local dimensionality from normalised eigenvalues (see :func:`local_svd`)."""
    n, D = eigs.shape
    if D == 1:
        return np.ones(n, dtype=np.int64)
    explains = np.cumsum(eigs, axis=1)[:, :-1] >= eig_cumsum_thresh
    decays = eigs[:, :-1] >= eig_decay_thresh * eigs[:, 1:]
    ok = explains & decays
    return np.where(ok.any(axis=1), ok.argmax(axis=1) + 1, D).astype(np.int64)


def tangent_similarity(bases: np.ndarray, dims: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``|det(U_a V_b^T)|`` for each pair of points (a[i], b[i]); 0 where dims differ.

    ``U_a`` and ``V_b`` are the ``d x D`` tangent bases. When ``d`` equals the full
    dimension the bases span the same space and the similarity is 1.
    """
    a = np.asarray(a, dtype=np.int64).ravel()
    b = np.asarray(b, dtype=np.int64).ravel()
    out = np.zeros(a.shape, dtype=np.float64)
    D = bases.shape[1]
    da, db = dims[a], dims[b]
    same = da == db
    for d in np.unique(da[same]):
        sel = np.flatnonzero(same & (da == d))
        if d == D:
            out[sel] = 1.0
            continue
        for start in range(0, sel.size, PAIR_CHUNK):
            part = sel[start : start + PAIR_CHUNK]
            u = bases[a[part], :d]
            v = bases[b[part], :d]
            if d == 1:
                out[part] = np.abs(np.einsum("pij,pij->p", u, v))
                continue
            m = u @ v.transpose(0, 2, 1)
            if d == 2:
                out[part] = np.abs(m[:, 0, 0] * m[:, 1, 1] - m[:, 0, 1] * m[:, 1, 0])
            else:
                out[part] = np.abs(np.linalg.det(m))
    return out


def _directions(d: int) -> np.ndarray:
    """Fixed probe directions for the edge test in ``d >= 3`` dimensions.

    The 2d signed coordinate axes, the 2**d signed diagonals (capped at 64) and
    64 further directions from a fixed quasi-random sequence on the sphere.
    """
    axes = np.concatenate([np.eye(d), -np.eye(d)])
    corners = ((np.arange(min(2**d, 64))[:, None] >> np.arange(d)) & 1) * 2.0 - 1.0
    corners /= np.sqrt(d)
    rng = np.random.default_rng(12345)
    extra = rng.standard_normal((64, d))
    extra /= np.linalg.norm(extra, axis=1, keepdims=True)
    return np.concatenate([axes, corners, extra])


def edge_mask(rel: np.ndarray) -> np.ndarray:
    """Whether each point lies outside the interior of its neighbours' convex hull.

    ``rel`` is (n, m, d): the m neighbours of each point in the point's own local
    tangent coordinates, relative to the point. A point is an edge when some
    direction has no neighbour strictly ahead of it:

    - d = 1: all neighbours on one side (exact);
    - d = 2: the largest angular gap between neighbours, seen from the point, is at
      least pi (exact);
    - d >= 3: tested along a fixed set of probe directions (the local axes, the
      diagonals, quasi-random directions, and the direction away from the
      neighbours' centroid), a cheap approximation of the convex hull test.

    A neighbour at zero distance makes the point interior in d >= 2 (it is a
    vertex of the hull). Points with at most d neighbours are edges.
    """
    n, m, d = rel.shape
    if m <= d:
        return np.ones(n, dtype=bool)
    if d == 1:
        r = rel[:, :, 0]
        return (r.min(axis=1) >= 0) | (r.max(axis=1) <= 0)
    twin = np.all(rel == 0, axis=2).any(axis=1)
    if d == 2:
        ang = np.sort(np.arctan2(rel[:, :, 1], rel[:, :, 0]), axis=1)
        gaps = np.diff(ang, axis=1)
        wrap = 2 * np.pi - (ang[:, -1] - ang[:, 0])
        biggest = np.maximum(gaps.max(axis=1), wrap)
        return (biggest >= np.pi) & ~twin
    dirs = _directions(d)
    out = np.zeros(n, dtype=bool)
    for start in range(0, n, 4096):
        r = rel[start : start + 4096]
        away = -r.mean(axis=1)
        norm = np.linalg.norm(away, axis=1, keepdims=True)
        away = np.divide(away, norm, out=np.zeros_like(away), where=norm > 0)
        ahead = (r @ dirs.T).max(axis=1) <= 0
        ahead_away = (r @ away[:, :, None])[:, :, 0].max(axis=1) <= 0
        out[start : start + 4096] = (ahead.any(axis=1) | (ahead_away & (norm[:, 0] > 0)))
    return out & ~twin
