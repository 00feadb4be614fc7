"""A straightforward point-by-point MIMOSA, kept as a correctness oracle and speed baseline.

It follows the same definitions as the batched implementation (same neighbours,
same RANSAC refit, same dimensionality rule, same edge criterion, same merge rule)
but loops over points, neighbour pairs and edge points in Python, one small numpy
call at a time, the way the algorithms read in the paper's appendix. It is slow on
purpose; use :func:`hier_models.fit_mimosa`.

As an oracle of the package's internals it reuses MIMOSA's private geometry and tree
steps, the one place outside ``hier_models`` that does.
"""
from __future__ import annotations

from collections import deque

import numpy as np
from sklearn.neighbors import BallTree

from hier_models._mimosa import _resolve
from hier_models._mimosa._geometry import edge_mask, intrinsic_dims, nearest_neighbors
from hier_models._mimosa._progress import Stopwatch
from hier_models._mimosa._tree import component_hierarchy


def pointwise_local_svd(codes, neighbors, ransac_frac, eig_cumsum_thresh, eig_decay_thresh):
    """Local SVD of one neighbourhood at a time; returns (bases, eigs, dims)."""
    n = len(codes)
    D = codes.shape[1]
    bases = np.empty((n, D, D))
    eigs = np.empty((n, D))
    for i in range(n):
        X = codes[neighbors[i]]
        mean = X.mean(axis=0)
        _, s, vt = np.linalg.svd(X - mean, full_matrices=False)
        if ransac_frac < 1:
            errors = []
            for x in X:
                per_dim = []
                for d in range(D):
                    V = vt[:d]
                    recon = mean + (x - mean) @ V.T @ V
                    per_dim.append(np.linalg.norm(x - recon))
                errors.append(np.linalg.norm(per_dim))
            errors = np.array(errors)
            inliers = X[errors <= np.percentile(errors, 100 * ransac_frac)]
            _, s, vt = np.linalg.svd(inliers - inliers.mean(axis=0), full_matrices=False)
        ev = s**2
        bases[i, : len(vt)] = vt
        eigs[i] = ev / ev.sum() if ev.sum() > 0 else 0.0
    return bases, eigs, intrinsic_dims(eigs, eig_cumsum_thresh, eig_decay_thresh)


def pointwise_similarity(bases, dims, i, j):
    """Tangent-plane similarity of two points."""
    if dims[i] != dims[j]:
        return 0.0
    d = dims[i]
    if d == bases.shape[1]:
        return 1.0
    return abs(np.linalg.det(bases[i, :d] @ bases[j, :d].T))


def pointwise_components(neighbors, bases, dims, cos_simil_thresh, contagion_num):
    """Contagion components grown one point at a time from a stack."""
    n = len(neighbors)
    labels = np.full(n, -1, dtype=np.int64)
    next_id = 0
    for seed in range(n):
        if labels[seed] >= 0:
            continue
        members = {int(j) for j in neighbors[seed]
                   if labels[j] < 0 and pointwise_similarity(bases, dims, seed, j) >= cos_simil_thresh}
        stack = list(members)
        visits: dict[int, int] = {}
        while stack:
            i = stack.pop()
            for j in neighbors[i]:
                j = int(j)
                if labels[j] >= 0 or j in members:
                    continue
                if pointwise_similarity(bases, dims, i, j) >= cos_simil_thresh:
                    visits[j] = visits.get(j, 0) + 1
                    if visits[j] >= contagion_num:
                        members.add(j)
                        stack.append(j)
        labels[list(members)] = next_id
        next_id += 1
    return labels


def pointwise_edges(codes, bases, dims, pts, num_nearest_neighbors):
    """Edge points of one component, tested one point at a time."""
    if len(pts) <= 2:
        return np.array(pts)
    local = codes[pts]
    tree = BallTree(local)
    k = min(num_nearest_neighbors, len(pts))
    out = []
    for a, p in enumerate(pts):
        d = dims[p]
        nb = tree.query(local[a : a + 1], k=k)[1][0]
        nb = nb[nb != a][: k - 1] if a in nb else nb[1:]
        rel = (local[nb] - local[a]) @ bases[p, :d].T
        if edge_mask(rel[None])[0]:
            out.append(p)
    return np.array(out, dtype=np.int64)


def pointwise_overlap(codes, bases, dims, comp_dims, edges, cos_simil_thresh):
    """Edge overlap matrix, one (component, component, edge point) at a time."""
    C = len(edges)
    M = np.zeros((C, C))
    for i in range(C):
        for j in range(C):
            if i == j or comp_dims[i] != comp_dims[j] or len(edges[i]) == 0 or len(edges[j]) == 0:
                continue
            hits = 0
            for p in edges[i]:
                q = edges[j][np.argmin(np.linalg.norm(codes[edges[j]] - codes[p], axis=1))]
                hits += pointwise_similarity(bases, dims, p, q) >= cos_simil_thresh
            M[i, j] = hits / len(edges[i])
    return M


def pointwise_merge(M, comp_dims, min_common_edge_frac):
    """Merge groups by breadth-first search over the symmetrised overlap."""
    C = len(comp_dims)
    sym = 0.5 * (M + M.T)
    groups = np.full(C, -1, dtype=np.int64)
    g = 0
    for start in range(C):
        if groups[start] >= 0:
            continue
        queue = deque([start])
        groups[start] = g
        while queue:
            i = queue.popleft()
            for j in range(C):
                if groups[j] < 0 and comp_dims[j] == comp_dims[i] and sym[i, j] >= min_common_edge_frac(int(comp_dims[i])):
                    groups[j] = g
                    queue.append(j)
        g += 1
    return groups


def fit_mimosa_pointwise(codes, hp, tree: str = "ball"):
    """Point-by-point MIMOSA with resolved hyperparameters ``hp`` (see ``_resolve``).

    Returns a dict with ``hierarchy``, ``assignments``, ``local_dims``, ``bases``,
    ``initial_components``, ``edges`` and ``timings`` (seconds per step, named as in
    :class:`~hier_models.MimosaResult`; similarity is computed inside the
    component growth here).
    """
    Z = np.asarray(codes, dtype=np.float64)
    n = len(Z)
    watch = Stopwatch()
    lap = watch.lap
    _, neighbors = nearest_neighbors(Z, hp["num_nearest_neighbors"], tree)
    lap("neighbors")
    bases, eigs, dims = pointwise_local_svd(
        Z, neighbors, hp["ransac_frac"], hp["eig_cumsum_thresh"], hp["eig_decay_thresh"]
    )
    lap("local_svd")
    initial = pointwise_components(neighbors, bases, dims, hp["cos_simil_thresh"], hp["contagion_num"])
    lap("build_components")
    members = [np.flatnonzero(initial == c) for c in range(initial.max() + 1)]
    members = [m for m in members if len(m) >= hp["min_size_init"]]
    comp_dims = np.array([dims[m[0]] for m in members], dtype=np.int64)
    edges = [pointwise_edges(Z, bases, dims, m, hp["num_nearest_neighbors"]) for m in members]
    lap("edges")
    M = pointwise_overlap(Z, bases, dims, comp_dims, edges, hp["cos_simil_thresh"])
    groups = pointwise_merge(M, comp_dims, hp["min_common_edge_frac"])
    lap("merge_components")
    merged = []
    for g in range(groups.max() + 1 if len(groups) else 0):
        pts = np.sort(np.concatenate([members[c] for c in np.flatnonzero(groups == g)]))
        if len(pts) >= hp["min_size_merged"]:
            merged.append((int(dims[pts[0]]), -len(pts), int(pts[0]), pts))
    merged.sort(key=lambda t: t[:3])
    final_members = [t[3] for t in merged]
    final_dims = np.array([t[0] for t in merged], dtype=np.int64)
    hierarchy, paths, _ = component_hierarchy(
        Z, final_members, final_dims, hp["neighbor_lengthscale_mult"], tree=tree
    )
    assignments = np.full(n, -1, dtype=np.int64)
    for c, pts in enumerate(final_members):
        assignments[pts] = paths[c]
    lap("construct_hierarchy")
    return {
        "hierarchy": hierarchy,
        "assignments": assignments,
        "local_dims": dims,
        "bases": bases,
        "initial_components": initial,
        "edges": edges,
        "timings": watch.done(),
    }


def resolved_hyperparameters(num_points: int, num_dims: int, hyperparameters: dict) -> dict:
    """``hyperparameters`` (all of them, e.g. :data:`hier_models.MIMOSA_DEFAULTS`) as
    :func:`hier_models.fit_mimosa` resolves them for ``num_points`` codes of
    ``num_dims`` dimensions (sizes as point counts): what :func:`fit_mimosa_pointwise`
    takes."""
    return _resolve(int(num_points), int(num_dims), dict(hyperparameters))
