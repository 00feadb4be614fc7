"""Spaceshapes: binary 64x64 images of moons, stars and ships (a hierarchical dSprites).

Ross & Doshi-Velez (2021), section 4. Factors, all continuous ones U(0, 1):

- ``x``, ``y``: translation of the shape centre by ``(x - 0.5) / 2`` and
  ``(y - 0.5) / 2`` image widths (+/-16 px; ``y`` points up);
- ``shape`` in {moon, star, ship};
- moon -> ``phase``: a disc of radius 0.19 image widths lit from the left; the
  terminator at ``u = k * sqrt(R^2 - v^2)`` with ``k = 1.6 * phase - 0.6``, from a
  thin crescent (phase 0) to the full disc (phase 1);
- star -> ``shine``: a diamond of half-diagonal 0.2 whose four edges are carved
  inward by circular arcs through its corners; the arc's sagitta grows with shine
  (0: plain diamond, 1: carved 0.041 image widths deep at the edge midpoints);
- ship -> ``angle``: an equilateral triangle (side 0.275) with two thrusters under
  its base, rotated by ``-45 + 90 * angle`` degrees, and ``jet`` in {none, jet};
  jet -> ``jetlen``: two flames whose length is ``0.25 + 0.42 * jetlen`` of the
  ship's side.

Each pixel is on when its centre lies inside the shape. Rendering is vectorised over
images and pixels in chunks, so the 60,000-image dataset takes seconds.
"""
from __future__ import annotations

import numpy as np

from hier_datasets.ground_truth import GroundTruth, register
from hier_datasets.hierarchy import Categorical, Group, Hierarchy

SIZE = 64
MOON_RADIUS = 0.19
STAR_RADIUS = 0.2
STAR_MAX_CARVE = 0.04125
SHIP_SIDE = 0.275
THRUSTER_HEIGHT = 0.15
JET_MIN, JET_MAX = 0.25, 0.67
SHAPES = ("moon", "star", "ship")

HIERARCHY = Hierarchy(
    Group(
        ("x", "y"),
        Categorical(
            "shape",
            (
                ("moon", Group(("phase",))),
                ("star", Group(("shine",))),
                ("ship", Group(("angle",), Categorical("jet", (("none", Group()), ("jet", Group(("jetlen",))))))),
            ),
        ),
    )
)

# Pixel-centre coordinates in image widths, origin at the image centre, v pointing up.
_U = ((np.arange(SIZE) + 0.5) / SIZE - 0.5).astype(np.float32)
_V = -_U


def _moon(du, dv, phase):
    k = (1.6 * phase - 0.6)[:, None, None]
    half = np.sqrt(np.maximum(MOON_RADIUS**2 - dv**2, 0.0))
    return (du * du + dv * dv <= MOON_RADIUS**2) & (du >= -half) & (du <= k * half)


def _star(du, dv, shine):
    a, b = np.abs(du), np.abs(dv)
    diamond = a + b <= STAR_RADIUS
    # Circle through the corners (0, r), (r, 0) and the carved edge midpoint (m, m).
    m = STAR_RADIUS / 2 - STAR_MAX_CARVE * shine
    # Carved where the arc's denominator is non-zero in float32 (a shine below ~1e-7
    # leaves m at R / 2: the plain diamond, the limit of a vanishing carve).
    denominator = 4 * m - 2 * STAR_RADIUS
    carved = denominator < 0
    safe = np.where(carved, denominator, -1.0)
    c = ((2 * m * m - STAR_RADIUS**2) / safe)[:, None, None]
    rad2 = np.where(carved, 2 * (c[:, 0, 0] - m) ** 2, -1.0)[:, None, None]
    return diamond & ((a - c) ** 2 + (b - c) ** 2 > rad2)


def _ship(du, dv, angle, jet, jetlen):
    theta = np.deg2rad(-45.0 + 90.0 * angle)
    cos, sin = np.cos(theta)[:, None, None], np.sin(theta)[:, None, None]
    p = cos * du + sin * dv
    q = -sin * du + cos * dv
    height = np.sqrt(3) / 2 * SHIP_SIDE
    base = -height / 3
    hull = (q > base) & (q - base < height - np.sqrt(3) * np.abs(p))
    in_column = np.abs(np.abs(p) - SHIP_SIDE / 4) < SHIP_SIDE / 6
    thruster_end = base - THRUSTER_HEIGHT * SHIP_SIDE
    thrusters = in_column & (q <= base) & (q > thruster_end)
    # jet holds option index + 1: 1 none, 2 jet (a jet of jetlen 0 still has a flame)
    flame = np.where(jet == 2, (JET_MIN + (JET_MAX - JET_MIN) * jetlen) * SHIP_SIDE, 0.0)[:, None, None]
    jets = in_column & (q <= thruster_end) & (q > thruster_end - flame)
    return hull | thrusters | jets


def render(factors: np.ndarray, chunk: int = 2048) -> np.ndarray:
    """(n, 64, 64, 1) uint8 images with values 0 / 1 for validated factors."""
    factors = np.asarray(factors, dtype=np.float64)
    out = np.zeros((len(factors), SIZE, SIZE, 1), dtype=np.uint8)
    idx = {name: HIERARCHY.index(name) for name in HIERARCHY.names}
    for lo in range(0, len(factors), chunk):
        f = factors[lo : lo + chunk]
        du = _U[None, None, :] - ((f[:, idx["x"]] - 0.5) / 2).astype(np.float32)[:, None, None]
        dv = _V[None, :, None] - ((f[:, idx["y"]] - 0.5) / 2).astype(np.float32)[:, None, None]
        shape = f[:, idx["shape"]].astype(np.int64)
        img = np.zeros((len(f), SIZE, SIZE), dtype=bool)
        # categoricals hold option index + 1: moon 1, star 2, ship 3
        for k, draw, params in (
            (1, _moon, ("phase",)),
            (2, _star, ("shine",)),
            (3, _ship, ("angle", "jet", "jetlen")),
        ):
            rows = np.flatnonzero(shape == k)
            if rows.size:
                args = [f[rows, idx[p]].astype(np.float32) for p in params]
                img[rows] = draw(du[rows], dv[rows], *args)
        out[lo : lo + chunk, :, :, 0] = img
    return out


class Spaceshapes(GroundTruth):
    """The Spaceshapes generative process.

    Shapes are drawn in exact proportions moon 1/3, star 1/3, ship without jet 1/6,
    ship with jet 1/6 (the paper's 20,000 / 20,000 / 10,000 / 10,000 of 60,000).
    """

    name = "spaceshapes"
    hierarchy = HIERARCHY
    observation_name = "image"
    observation_shape = (SIZE, SIZE, 1)
    observation_dtype = np.uint8
    observation_max = 1
    stratified = True
    low = np.zeros(HIERARCHY.num_dims)
    high = np.ones(HIERARCHY.num_dims)

    @property
    def path_probabilities(self) -> np.ndarray:
        return np.array([1 / 3, 1 / 3, 1 / 6, 1 / 6])

    def _continuous_values(self, n, rng):
        return rng.random((n, self.num_factors))

    def _observations(self, factors, rng):
        return render(factors)


def _from_config(config: str | None, **kwargs) -> Spaceshapes:
    if config not in (None, "default"):
        raise ValueError(f"unknown spaceshapes config {config!r}; spaceshapes has a single config ('default')")
    if kwargs:
        raise ValueError(f"spaceshapes takes no options, got {sorted(kwargs)}")
    return Spaceshapes()


register("spaceshapes", _from_config)
