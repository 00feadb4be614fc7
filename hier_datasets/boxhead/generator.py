"""Boxhead 1-3: the factors of a cube in a room whose macro-level hue drives four micro-level hues.

Chen et al. (2022), appendix B.1. Ten factors, in this order:

==============  ==========================================  ======
factor          distribution (before discretisation)        levels
==============  ==========================================  ======
``wall_hue``    U(0, 1)                                     10
``floor_hue``   U(0, 1)                                     10
``cube_hue``    U(0, 1)                                     10
``scale``       U(1, 1.25)                                  10
``azimuth``     U(-pi/6, pi/6) (radians)                    10
``macro_hue``   Boxhead 1: cube_hue + N(0, 0.2);            7
                Boxhead 2 and 3: U(0, 1)
``micro_hueI``  Boxhead 1: macro_hue + U(-0.1, 0.1);        4
(I = 1..4)      Boxhead 2: macro_hue + N(0, 0.1);
                Boxhead 3: macro_hue + N(0, 0.2)
==============  ==========================================  ======

Every factor has its *own draw*: the value itself for a factor without a parent, the
random offset from its parent otherwise (the dependency arrows are cube_hue ->
macro_hue in Boxhead 1 only, and macro_hue -> each micro hue in all variants). As
the paper says, discretisation is applied to that draw *before* the parent is added:
the own draw's distribution is cut into equally probable slices (at its quantiles
``k / n``) and each slice is represented by its mean, so a level is drawn with
probability ``1 / n`` and the discrete draw keeps the continuous draw's mean. For a
uniform draw the levels are the slice midpoints (e.g. hues ``0.05, 0.15, ..., 0.95``);
for ``N(0, sigma)`` they are ``sigma * n * (phi(z_k) - phi(z_k+1))``. Hues then wrap
modulo 1 (0 and 1 are the same colour).

``factors`` hold the values (absolute hues, scale, azimuth in radians); ``labels``
hold the level index of each factor's own draw (``0..n-1``), which is what the
generative process chose independently for that factor.

Images are rendered by :mod:`hier_datasets.boxhead.scene` (Open3D + PyVista), in
separate processes (:mod:`hier_datasets.boxhead.workers`) started on the first render.
The names shared with those modules (factor names, hues, image size, hue <-> RGB)
live in :mod:`hier_datasets.boxhead.constants` and are importable from here too.
"""
from __future__ import annotations

import importlib.util
import math
import os
from statistics import NormalDist

import numpy as np

from hier_datasets.boxhead import workers
from hier_datasets.boxhead.constants import (  # noqa: F401  (FACTOR_NAMES ... rgb_to_hue: importable from here)
    AZIMUTH_RANGE,
    FACTOR_NAMES,
    HUES,
    MACRO_FACTORS,
    MICRO,
    MICRO_FACTORS,
    SCALE_RANGE,
    SIZE,
    VARIANTS,
    hue_to_rgb,
    rgb_to_hue,
)
from hier_datasets.ground_truth import GroundTruth, register
from hier_datasets.hierarchy import Group, Hierarchy

HIERARCHY = Hierarchy(Group(FACTOR_NAMES))
MACRO_LEVELS, MICRO_LEVELS, OTHER_LEVELS = 7, 4, 10
#: a batch is split over at most ``len(batch) // MIN_IMAGES_PER_WORKER`` rendering processes
MIN_IMAGES_PER_WORKER = 256
#: default number of rendering processes at most (each holds about 0.5 GB)
DEFAULT_MAX_WORKERS = 8


def uniform_levels(low: float, high: float, n: int) -> np.ndarray:
    """Means of the ``n`` equally probable slices of U(low, high): the slice midpoints."""
    return low + (high - low) * (np.arange(n) + 0.5) / n


def normal_levels(sigma: float, n: int) -> np.ndarray:
    """Means of the ``n`` equally probable slices of N(0, sigma), lowest first.

    The slice between the standard-normal quantiles ``z_k`` and ``z_k+1`` has mean
    ``n * (phi(z_k) - phi(z_k+1))`` (``phi`` the density), times ``sigma``.
    """
    unit = NormalDist()
    edges = [-math.inf] + [unit.inv_cdf(k / n) for k in range(1, n)] + [math.inf]
    pdf = [0.0 if math.isinf(z) else unit.pdf(z) for z in edges]
    return np.array([sigma * n * (pdf[k] - pdf[k + 1]) for k in range(n)])


def dependencies(variant: str) -> tuple[tuple[str, str], ...]:
    """The dependency arrows (parent, child) of a variant."""
    _check_variant(variant)
    arrows = tuple(("macro_hue", m) for m in MICRO)
    return ((("cube_hue", "macro_hue"),) if variant == "boxhead1" else ()) + arrows


def own_levels(variant: str) -> dict[str, np.ndarray]:
    """For each factor, the values of its own discretised draw (offsets for dependent factors)."""
    _check_variant(variant)
    hue = uniform_levels(0.0, 1.0, OTHER_LEVELS)
    levels = {
        "wall_hue": hue,
        "floor_hue": hue,
        "cube_hue": hue,
        "scale": uniform_levels(*SCALE_RANGE, OTHER_LEVELS),
        "azimuth": uniform_levels(*AZIMUTH_RANGE, OTHER_LEVELS),
    }
    if variant == "boxhead1":
        levels["macro_hue"] = normal_levels(0.2, MACRO_LEVELS)
        micro = uniform_levels(-0.1, 0.1, MICRO_LEVELS)
    else:
        levels["macro_hue"] = uniform_levels(0.0, 1.0, MACRO_LEVELS)
        micro = normal_levels(0.1 if variant == "boxhead2" else 0.2, MICRO_LEVELS)
    levels.update({m: micro for m in MICRO})
    return {name: levels[name] for name in FACTOR_NAMES}


def _require_renderer() -> None:
    """ImportError naming the missing packages when Open3D or PyVista cannot be imported
    (sampling factors and labels needs neither)."""
    missing = [name for name in ("open3d", "pyvista") if importlib.util.find_spec(name) is None]
    if missing:
        raise ImportError(
            f"rendering Boxhead images needs {' and '.join(missing)}: pip install 'hierbench[boxhead]' "
            "(factors and labels work without them)"
        )


def _check_variant(variant) -> None:
    if variant not in VARIANTS:
        raise ValueError(f"unknown boxhead config {variant!r}; available configs: {list(VARIANTS)}")


def _check_workers(workers) -> int:
    if workers is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        return min(cores, DEFAULT_MAX_WORKERS)
    if isinstance(workers, bool) or not isinstance(workers, (int, np.integer)) or workers < 0:
        raise ValueError(
            f"workers must be an integer >= 0 (0: render in this process) or None (one per core), got {workers!r}"
        )
    return int(workers)


class Boxhead(GroundTruth):
    """The Boxhead generative process of one variant.

    Args:
      variant: ``"boxhead1"``, ``"boxhead2"`` or ``"boxhead3"``.
      workers: rendering processes (``None``: one per available core, at most
        ``DEFAULT_MAX_WORKERS``; each holds about 0.5 GB). Each is a
        fresh interpreter that builds the scene once and renders a contiguous slice
        of every batch; the images do not depend on the number of processes.
        Batches of fewer than ``MIN_IMAGES_PER_WORKER`` images per process use
        fewer processes. ``0`` renders in the calling process, which must not have
        imported TensorFlow: Mesa's OpenGL and TensorFlow crash in one process, so
        the TFDS builder and anything running beside TensorFlow need ``workers >= 1``.
        The processes are shared by every Boxhead object of the calling process;
        they start as batches need them and stop on :meth:`close` (or at the end of
        a ``with`` block) or when Python exits.
    """

    hierarchy = HIERARCHY
    observation_name = "image"
    observation_shape = (SIZE, SIZE, 3)
    observation_dtype = np.uint8
    observation_max = 255
    label_specs = {"labels": ((len(FACTOR_NAMES),), np.int64)}

    def __init__(self, variant: str = "boxhead1", workers: int | None = None):
        _check_variant(variant)
        self.variant = variant
        self.name = f"boxhead/{variant}"
        self.workers = _check_workers(workers)
        self.levels = own_levels(variant)
        self.num_levels = np.array([len(self.levels[n]) for n in FACTOR_NAMES])
        self.parent = np.full(len(FACTOR_NAMES), -1)
        for parent, child in dependencies(variant):
            self.parent[FACTOR_NAMES.index(child)] = FACTOR_NAMES.index(parent)
        self.circular = np.array([n in HUES for n in FACTOR_NAMES])
        self.low = np.array([{"scale": SCALE_RANGE[0], "azimuth": AZIMUTH_RANGE[0]}.get(n, 0.0) for n in FACTOR_NAMES])
        self.high = np.array([{"scale": SCALE_RANGE[1], "azimuth": AZIMUTH_RANGE[1]}.get(n, 1.0) for n in FACTOR_NAMES])

    @property
    def path_probabilities(self) -> np.ndarray:
        return np.ones(1)

    # ---------------------------------------------------------------- sampling
    def _continuous_values(self, n, rng):
        return self._values_from_draws(rng.integers(0, self.num_levels, size=(n, len(FACTOR_NAMES))))

    def _continuous_values_given(self, n, rng, fixed):
        """Values given fixed factors: every own draw from its conditional distribution.

        The own draws are independent and uniform over their levels, so given the fixed
        values they are uniform over the combinations that produce those values. The
        combinations of the fixed factors and their ancestors (at most 10 x 7 x 4^4)
        are enumerated; factors below a fixed one are then drawn given it as usual.
        """
        draws = rng.integers(0, self.num_levels, size=(n, len(FACTOR_NAMES)))
        if not fixed:
            return self._values_from_draws(draws)
        cols = sorted(fixed)
        chain = set()
        for d in cols:
            while d >= 0:
                chain.add(d)
                d = self.parent[d]
        chain = sorted(chain)
        grids = np.meshgrid(*[np.arange(self.num_levels[d]) for d in chain], indexing="ij")
        combos = np.zeros((grids[0].size, len(FACTOR_NAMES)), dtype=np.int64)
        combos[:, chain] = np.stack([g.ravel() for g in grids], axis=1)
        produced = self._values_from_draws(combos)[:, cols]
        wanted = np.stack([fixed[d] for d in cols], axis=1)
        targets, which = np.unique(wanted, axis=0, return_inverse=True)
        for t, target in enumerate(targets):
            diff = produced - target
            diff = np.where(self.circular[cols], np.mod(diff + 0.5, 1.0) - 0.5, diff)
            match = np.flatnonzero(np.all(np.abs(diff) <= 1e-4, axis=1))
            if match.size == 0:
                given = {FACTOR_NAMES[d]: round(float(v), 6) for d, v in zip(cols, target)}
                raise ValueError(
                    f"fixed: {self.variant} cannot produce {given}; a factor takes one of its levels "
                    f"(plus its parent's value where it has one): see metadata()['level_values']"
                )
            rows = np.flatnonzero(which.ravel() == t)
            draws[np.ix_(rows, chain)] = combos[match[rng.integers(match.size, size=rows.size)]][:, chain]
        return self._values_from_draws(draws)

    def _values_from_draws(self, draws: np.ndarray) -> np.ndarray:
        """Factor values from level indices of the own draws: add parents in column order
        (parents come first) and wrap hues."""
        values = np.empty(draws.shape)
        for d, name in enumerate(FACTOR_NAMES):
            values[:, d] = self.levels[name][draws[:, d]]
            if self.parent[d] >= 0:
                values[:, d] += values[:, self.parent[d]]
            if self.circular[d]:
                # wrap, and keep a float32 copy off 1.0 (the same colour as 0.0)
                values[:, d] = np.mod(values[:, d], 1.0)
                values[np.float32(values[:, d]) >= 1.0, d] = 0.0
        return values

    def labels(self, factors) -> np.ndarray:
        """(n, 10) int64: the level index of each factor's own draw.

        Raises ValueError naming the factor when a value is not one of its levels
        (within 1e-4; hues compared modulo 1).
        """
        arr = self.validate_factors(factors)
        out = np.empty(arr.shape, dtype=np.int64)
        for d, name in enumerate(FACTOR_NAMES):
            own = arr[:, d] - (arr[:, self.parent[d]] if self.parent[d] >= 0 else 0.0)
            diff = own[:, None] - self.levels[name][None, :]
            if self.circular[d]:
                diff = np.mod(diff + 0.5, 1.0) - 0.5
            out[:, d] = np.argmin(np.abs(diff), axis=1)
            err = np.abs(diff[np.arange(len(arr)), out[:, d]])
            if err.size and err.max() > 1e-4:
                row = int(np.argmax(err))
                what = f"offset from {FACTOR_NAMES[self.parent[d]]!r}" if self.parent[d] >= 0 else "value"
                raise ValueError(
                    f"factors row {row}: {name!r} has {what} {own[row]:g}, not one of its {self.variant} "
                    f"levels {np.round(self.levels[name], 4).tolist()}"
                )
        return out

    def extra_labels(self, factors):
        return {"labels": self.labels(factors)}

    def metadata(self) -> dict:
        meta = super().metadata()
        meta.update(
            {
                "dependencies": [list(arrow) for arrow in dependencies(self.variant)],
                "macro_factors": list(MACRO_FACTORS),
                "micro_factors": list(MICRO_FACTORS),
                "num_levels": {n: int(k) for n, k in zip(FACTOR_NAMES, self.num_levels)},
                "level_values": {n: [float(v) for v in self.levels[n]] for n in FACTOR_NAMES},
                "labels": "level index of each factor's own draw: its value, or its offset from the parent "
                "in 'dependencies'; hues wrap modulo 1; azimuth in radians",
            }
        )
        return meta

    # ---------------------------------------------------------------- rendering
    def _observations(self, factors, rng):
        _require_renderer()
        if self.workers == 0:
            from hier_datasets.boxhead import scene  # Open3D and PyVista: only when rendering here

            return scene.render(factors)
        return workers.render(factors, max(1, min(self.workers, len(factors) // MIN_IMAGES_PER_WORKER)))

    def close(self) -> None:
        """Stop the rendering processes, which every Boxhead object of this process shares.

        A later render starts them again; they also stop when Python exits.
        """
        workers.shutdown()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _from_config(config: str | None, **kwargs) -> Boxhead:
    unknown = sorted(set(kwargs) - {"workers"})
    if unknown:
        raise ValueError(f"boxhead takes only the option 'workers', got {unknown}")
    return Boxhead(config or "boxhead1", **kwargs)


register("boxhead", _from_config)
