"""The LSBD metric for SO(2) symmetries (Perez Rey et al., "A Metric for Linear
Symmetry-Based Disentanglement", section 4, eqs. 6-13).

The data are a full grid over K subgroups SO(2) (evenly spaced angles on each axis),
optionally repeated for several objects (the cylinder case: SO(2) x objects). For each
subgroup k the encodings are centred along axis k (eq. 6), which removes whatever the
other subgroups contribute. The centred codes are projected by PCA onto their top two
principal components and each component is scaled to variance 1/2 (eq. 8), so the
2-D points z'_g have mean squared norm 1. The PCA runs on the raw centred codes, as in
the authors' implementation: the paper's eq. 8 also divides each code dimension by its
standard deviation first, but that blows a dimension carrying only tiny noise up to the
size of the signal and loses the plane of the circle. An LSBD encoding moves the 2-D
points on a circle as ``R(omega_k * theta)``; undoing that rotation should collapse
them onto one point. The dispersion left (eq. 12, for one subgroup)::

    L_k(omega) = mean_g || R(-omega * theta_g) z'_g - mean_g' R(-omega * theta_g') z'_g' ||^2

is minimised over integers omega in ``omega_range`` (eq. 13). The score is ``mean_k
min_omega L_k(omega)``: 0 for a perfect embedding (even after any invertible linear
map), about 1 for random codes. The objective separates over subgroups, so the search
costs (number of omegas) * K evaluations, not (number of omegas)^K.

Variance 1/2 is the population variance (divisor n, the number of points in the
plane); the authors' implementation divides by n - 1, so its dispersions are ours times
(n - 1) / n. For several objects the plane is fitted per object and each object may
take omega or -omega (PCA fixes a plane only up to a reflection), with one |omega| per
subgroup shared by all objects.
"""
from __future__ import annotations

import numbers

import numpy as np

__all__ = ["lsbd"]

#: dispersions closer than this to the minimum count as tied
_TIE_TOLERANCE = 1e-9


def _check_grid(codes_grid, num_object_axes, omega_range):
    try:
        grid = np.asarray(codes_grid, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"codes_grid must be a numeric array: {err}") from None
    if not isinstance(num_object_axes, numbers.Integral) or isinstance(num_object_axes, bool) or num_object_axes < 0:
        raise ValueError(f"num_object_axes must be an integer >= 0, got {num_object_axes!r}")
    if grid.ndim < 2 + num_object_axes:
        raise ValueError(
            f"codes_grid must have shape (*object_axes, n_1, ..., n_K, D) with K >= 1 and "
            f"{num_object_axes} object axes, got {grid.ndim}-D shape {grid.shape}"
        )
    if grid.size == 0:
        raise ValueError(f"codes_grid is empty (shape {grid.shape})")
    if not np.all(np.isfinite(grid)):
        raise ValueError("codes_grid contains NaN or infinite values")
    group_shape = grid.shape[num_object_axes:-1]
    if min(group_shape) < 3:
        raise ValueError(f"codes_grid needs at least 3 angles on every group axis, got group axes {group_shape}")
    if (
        not isinstance(omega_range, (tuple, list))
        or len(omega_range) != 2
        or not all(isinstance(w, numbers.Integral) and not isinstance(w, bool) for w in omega_range)
        or omega_range[0] > omega_range[1]
    ):
        raise ValueError(f"omega_range must be a pair of integers (low, high) with low <= high, got {omega_range!r}")
    return grid


def _whitened_plane(points: np.ndarray) -> np.ndarray | None:
    """Centre, project onto the top-2 principal components, scale each to variance 1/2.

    The principal components are those of the raw centred points (no per-dimension
    standardisation); a component without variance (points on a line) is set to 0.
    Returns None when the points do not vary at all.
    """
    centred = points - points.mean(axis=0)
    if np.abs(centred).max() <= 1e-12 * max(1.0, np.abs(points).max()):
        return None
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    proj = np.zeros((len(points), 2))
    take = min(2, vt.shape[0])
    proj[:, :take] = centred @ vt[:take].T
    var = proj.var(axis=0)
    keep = var > 1e-20 * var.max()
    proj[:, keep] *= np.sqrt(0.5 / var[keep])
    proj[:, ~keep] = 0.0
    return proj


def _dispersions(plane: np.ndarray, theta: np.ndarray, omegas: np.ndarray) -> np.ndarray:
    """Dispersion after undoing R(omega * theta), for every omega.

    With points as complex numbers p, the rotation is p * exp(-i omega theta) and the
    norm is unchanged, so L(omega) = mean |p|^2 - |mean p exp(-i omega theta)|^2.
    """
    p = plane[:, 0] + 1j * plane[:, 1]
    means = p @ np.exp(-1j * np.outer(theta, omegas)) / len(p)
    return np.maximum(np.mean(np.abs(p) ** 2) - np.abs(means) ** 2, 0.0)


def lsbd(codes_grid, *, num_object_axes: int = 0, omega_range=(-10, 10)) -> dict:
    """LSBD score of encodings of a full grid of SO(2) x ... x SO(2) transformations.

    Args:
      codes_grid: array of shape ``(*object_axes, n_1, ..., n_K, D)``: the code of
        the data point with angle ``2 pi i_k / n_k`` on group axis k (and object
        indices on the leading ``num_object_axes`` axes). D >= 1.
      num_object_axes: leading axes that index objects (0 for a torus; 1 for a
        cylinder with one object axis). The dispersion is computed per object and
        averaged over objects, with one omega per subgroup shared by all objects.
      omega_range: inclusive range of integer frequencies searched per subgroup.

    Returns:
      ``{"score": float, "omegas": (K,) int array}`` where ``omegas`` are the minimising
      frequencies. PCA fixes each plane only up to a reflection, which flips the sign
      of omega, so omega and -omega score alike and the non-negative one is reported;
      among frequencies indistinguishable on the grid (omega and omega + n_k) the
      lowest is reported. Lower is better; 0 is perfect. A subgroup whose encodings do
      not vary along its axis cannot be represented faithfully and scores 1, the
      value of uninformative codes, with omega 0.

    Raises:
      ValueError: a grid with too few axes, non-finite codes, or a bad
        ``num_object_axes`` or ``omega_range``.

    Example:
      A torus embedded as (cos, sin) of each angle is a perfect linear
      representation (omegas 1 and 1):

      >>> import numpy as np
      >>> angles = np.stack(np.meshgrid(np.arange(8), np.arange(8), indexing="ij"), -1) * 2 * np.pi / 8
      >>> result = lsbd(np.concatenate([np.cos(angles), np.sin(angles)], -1))
      >>> round(result["score"], 6), result["omegas"].tolist()
      (0.0, [1, 1])
    """
    grid = _check_grid(codes_grid, num_object_axes, omega_range)
    objects = int(np.prod(grid.shape[:num_object_axes], dtype=np.int64))
    group_shape = grid.shape[num_object_axes:-1]
    grid = grid.reshape((objects,) + group_shape + (grid.shape[-1],))
    omegas = np.arange(omega_range[0], omega_range[1] + 1)
    scores, best = [], []
    for k, n_k in enumerate(group_shape):
        axis = 1 + k
        centred = grid - grid.mean(axis=axis, keepdims=True)
        shape = [1] * len(group_shape)
        shape[k] = n_k
        theta = np.broadcast_to((2 * np.pi * np.arange(n_k) / n_k).reshape(shape), group_shape).ravel()
        total = np.zeros(omegas.size)
        degenerate = False
        for o in range(objects):
            plane = _whitened_plane(centred[o].reshape(-1, grid.shape[-1]))
            if plane is None:
                degenerate = True
                break
            # PCA fixes each object's plane only up to a reflection, which flips the
            # sign of omega; let every object take the orientation that fits best.
            total += np.minimum(_dispersions(plane, theta, omegas), _dispersions(plane, theta, -omegas))
        if degenerate:
            scores.append(1.0)
            best.append(0)
            continue
        total /= objects
        # On n_k evenly spaced angles omega and omega + n_k act identically: among
        # (numerically) tied minima report the lowest frequency.
        tied = np.flatnonzero(total <= total.min() + _TIE_TOLERANCE)
        i = tied[np.lexsort((omegas[tied] < 0, np.abs(omegas[tied])))[0]]
        scores.append(float(total.min()))
        best.append(int(omegas[i]))
    return {"score": float(np.mean(scores)), "omegas": np.array(best, dtype=np.int64)}
